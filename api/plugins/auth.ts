import fastifyJwt from '@fastify/jwt';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { z } from 'zod';
import { adminRoles, findAdminUserById, type AdminRole } from '../../db/admin-users.ts';
import { DomainError } from '../../src/errors.ts';

/**
 * Administration authentication (the spec's Authentication 2): HS256 JWTs signed with
 * JWT_SECRET, 15 minutes by default. One guard serves every admin route: 401 for a missing,
 * malformed, expired or forged token, or a user since disabled; 403 for a valid token without
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

export interface AuthPluginOptions {
  secret: string;
  ttlSeconds: number;
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

    app.decorate('requireAdmin', (roles: readonly AdminRole[] = adminRoles) => async (request: FastifyRequest) => {
      const header = request.headers.authorization;
      if (header === undefined || !/^Bearer [A-Za-z0-9._~+/=-]+$/.test(header)) {
        throw new DomainError('UNAUTHENTICATED', 'a bearer token is required');
      }
      let claims: AdminClaims;
      try {
        claims = claimsSchema.parse(await request.jwtVerify());
      } catch {
        throw new DomainError('UNAUTHENTICATED', 'the bearer token is invalid or expired');
      }
      const user = await findAdminUserById(app.deps.pool, claims.sub);
      if (user === null || user.disabled) throw new DomainError('UNAUTHENTICATED', 'the bearer token is no longer valid');
      if (!roles.includes(user.role)) {
        throw new DomainError('FORBIDDEN', `this operation needs the role ${roles.join(' or ')}`);
      }
      request.admin = { ...claims, role: user.role };
    });
  },
  { name: 'auth', dependencies: ['deps'] },
);
