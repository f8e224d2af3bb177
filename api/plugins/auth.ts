import fastifyJwt from '@fastify/jwt';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { z } from 'zod';
import { adminRoles, findAdminUserById, type AdminRole } from '../../db/admin-users.ts';
import { DomainError, type ErrorCode } from '../../src/errors.ts';

/**
 * Administration authentication (the spec's Authentication 2): HS256 JWTs signed with
 * JWT_SECRET, 15 minutes by default. One guard serves every admin route: 401 for a missing,
 * malformed, expired or forged token, a token without exp or iat, issued in the future or
 * living longer than JWT_MAX_LIFETIME_SECONDS, a user since disabled, or a token issued before the
 * user's password last changed (npm run admin -- passwd, disable); 403 for a valid token without
 * the role.
 */

export const jwtIssuer = 'plc-settlement';
export const jwtAudience = 'plc-settlement-admin';

const claimsSchema = z.object({
  sub: z.string().uuid(),
  username: z.string(),
  role: z.enum(adminRoles),
  iat: z.number().int(),
  exp: z.number().int(),
});
export type AdminClaims = z.infer<typeof claimsSchema>;

declare module 'fastify' {
  interface FastifyInstance {
    /** An onRequest hook (auth before validation): the caller must hold a valid admin token with one of `roles`. */
    requireAdmin(roles?: readonly AdminRole[]): (request: FastifyRequest) => Promise<void>;
    signAdminToken(user: { id: string; username: string; role: AdminRole }): Promise<{ token: string; expiresInS: number }>;
  }
  interface FastifyRequest {
    admin: AdminClaims | null;
  }
}

/** The codes the guard answers with; documented on every route it guards (api/plugins/documented-responses.ts). */
export const adminGuardErrorCodes = ['UNAUTHENTICATED', 'FORBIDDEN'] as const satisfies readonly ErrorCode[];

const adminGuards = new WeakSet<object>();
/** Whether a route hook is the admin guard made by `requireAdmin`: what marks a route as an admin route. */
export function isAdminGuard(hook: unknown): boolean {
  return typeof hook === 'function' && adminGuards.has(hook);
}

export interface AuthPluginOptions {
  secret: string;
  ttlSeconds: number;
  /** The longest lifetime (exp - iat) a token may claim, whoever signed it. */
  maxLifetimeSeconds: number;
}

/** Clock skew allowed on a token's iat. */
export const tokenClockSkewS = 30;

/**
 * Why a correctly signed token is still refused, or null: it must say when it expires and when
 * it was issued, not in the future, and live no longer than `maxLifetimeS`. A leaked signing key
 * or a bug that issued a 10-year token must not yield a 10-year credential.
 */
export function tokenLifetimeProblem(claims: { iat?: unknown; exp?: unknown }, nowS: number, maxLifetimeS: number): string | null {
  const { iat, exp } = claims;
  if (typeof exp !== 'number' || !Number.isInteger(exp)) return 'has no expiry (exp)';
  if (typeof iat !== 'number' || !Number.isInteger(iat)) return 'has no issue time (iat)';
  if (iat > nowS + tokenClockSkewS) return 'is issued in the future';
  if (exp <= iat) return 'expires before it was issued';
  if (exp - iat > maxLifetimeS) return `lives ${exp - iat} s, longer than the ${maxLifetimeS} s allowed`;
  return null;
}

export const authPlugin = fp<AuthPluginOptions>(
  async (app: FastifyInstance, options) => {
    await app.register(fastifyJwt, {
      secret: options.secret,
      sign: { algorithm: 'HS256', iss: jwtIssuer, aud: jwtAudience, expiresIn: `${options.ttlSeconds}s` },
      verify: { algorithms: ['HS256'], allowedIss: jwtIssuer, allowedAud: jwtAudience },
    });
    app.decorateRequest('admin', null);

    app.decorate('signAdminToken', async (user: { id: string; username: string; role: AdminRole }) => ({
      token: app.jwt.sign({ sub: user.id, username: user.username, role: user.role }),
      expiresInS: options.ttlSeconds,
    }));

    app.decorate('requireAdmin', (roles: readonly AdminRole[] = adminRoles) => {
      const guard = async (request: FastifyRequest): Promise<void> => {
        const header = request.headers.authorization;
        if (header === undefined || !/^Bearer [A-Za-z0-9._~+/=-]+$/.test(header)) {
          throw new DomainError('UNAUTHENTICATED', 'a bearer token is required');
        }
        let verified: unknown;
        try {
          verified = await request.jwtVerify();
        } catch {
          throw new DomainError('UNAUTHENTICATED', 'the bearer token is invalid or expired');
        }
        const lifetimeProblem = tokenLifetimeProblem(verified as { iat?: unknown; exp?: unknown }, Math.floor(Date.now() / 1000), options.maxLifetimeSeconds);
        if (lifetimeProblem !== null) throw new DomainError('UNAUTHENTICATED', `the bearer token ${lifetimeProblem}`);
        const parsed = claimsSchema.safeParse(verified);
        if (!parsed.success) throw new DomainError('UNAUTHENTICATED', 'the bearer token is invalid or expired');
        const claims: AdminClaims = parsed.data;
        const user = await findAdminUserById(app.deps.pool, claims.sub);
        if (user === null || user.disabled) throw new DomainError('UNAUTHENTICATED', 'the bearer token is no longer valid');
        // A password change or a disable ends the tokens issued before it. Tokens carry whole
        // seconds: one issued in the same second as the change is refused too (log in again).
        if (user.tokens_valid_after !== null && claims.iat <= Math.floor(user.tokens_valid_after.getTime() / 1000)) {
          throw new DomainError('UNAUTHENTICATED', 'the bearer token was issued before the password or the account last changed');
        }
        if (!roles.includes(user.role)) {
          throw new DomainError('FORBIDDEN', `this operation needs the role ${roles.join(' or ')}`);
        }
        request.admin = { ...claims, role: user.role };
      };
      adminGuards.add(guard);
      return guard;
    });
  },
  { name: 'auth', dependencies: ['deps'] },
);

/**
 * Puts the admin guard on every route a route group declares, as the last of the route's own
 * onRequest hooks: after its rate limit, which `@fastify/rate-limit` adds to the route when the
 * route is declared, in an onRoute hook of the root that runs before this group's. A group whose
 * rate limits count before authentication uses this instead of `addHook('onRequest', guard)`,
 * which would run the guard first (an instance's hooks run before a route's).
 */
export function guardEveryRoute(app: FastifyInstance, roles?: readonly AdminRole[]): void {
  const guard = app.requireAdmin(roles);
  app.addHook('onRoute', (route) => {
    const own = route.onRequest === undefined ? [] : [route.onRequest].flat();
    route.onRequest = [...own, guard];
  });
}
