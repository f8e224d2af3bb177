import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { adminRoles } from '../../db/admin-users.ts';
import { loginThrottlePolicy } from '../../infra/config.ts';
import { DomainError } from '../../src/errors.ts';
import { createAdminLogin } from '../admin-login.ts';
import { adminErrors, errorResponse, standardErrors } from '../schemas/common.ts';

const loginRequest = z
  .strictObject({
    username: z.string().min(1).max(64),
    password: z.string().min(1).max(256),
  })
  .meta({ id: 'LoginRequest' });

const loginResponse = z
  .object({
    access_token: z.string(),
    token_type: z.literal('bearer'),
    expires_in: z.number().int().describe('seconds until the token expires'),
  })
  .meta({ id: 'LoginResponse' });

const verifyResponse = z
  .object({
    valid: z.literal(true),
    user_id: z.string().uuid(),
    username: z.string(),
    role: z.enum(adminRoles),
    expires_at: z.string().describe('ISO 8601'),
  })
  .meta({ id: 'VerifyResponse' });

export async function authRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const admins = createAdminLogin({ pool: app.deps.pool, policy: loginThrottlePolicy(app.deps.config), warn: (object, message) => app.log.warn(object, message) });

  routes.post(
    '/login',
    {
      schema: {
        tags: ['auth'],
        summary: 'Log in an administrator; answers a JWT valid 15 minutes',
        description:
          'Checks the username and password of an administrator (the first super-admin is created at start from `ADMIN_USERNAME` and `ADMIN_PASSWORD`, or `.data/admin-password` in development) and answers a bearer token (HS256 JWT, `JWT_TTL_SECONDS`, 15 minutes by default) for the admin routes: send it as `Authorization: Bearer <access_token>`. An unknown user, a disabled one and a wrong password get the same 401 `INVALID_CREDENTIALS`, in the same time. Attempts are limited per client address (429 `RATE_LIMITED`, `LOGIN_RATE_LIMIT_PER_MINUTE`) and per account: after a few failures each attempt waits longer, and many lock the account (429 `LOGIN_THROTTLED` with Retry-After; `npm run admin -- unlock <username>` lifts it).',
        body: loginRequest,
        requestExample: { body: { username: 'admin', password: 'correct horse battery staple' } },
        response: { 200: loginResponse, 401: errorResponse, 429: errorResponse, ...standardErrors },
      },
      config: {
        rateLimit: {
          max: app.deps.config.LOGIN_RATE_LIMIT_PER_MINUTE,
          timeWindow: 60_000,
          groupId: 'auth-login',
        },
      },
    },
    async (request) => {
      const user = await admins.login(request.body.username, request.body.password);
      const { token, expiresInS } = await app.signAdminToken(user);
      request.log.info({ admin_user_id: user.id }, 'admin login');
      return { access_token: token, token_type: 'bearer' as const, expires_in: expiresInS };
    },
  );

  routes.get(
    '/verify',
    {
      schema: {
        tags: ['auth'],
        summary: 'Check a bearer token and return its user',
        description:
          'Answers the user behind the bearer token (id, username, role) and when the token expires; 401 when the token is missing, malformed, expired, forged, or belongs to a user since disabled.',
        security: [{ bearer: [] }],
        response: { 200: verifyResponse, ...adminErrors },
      },
      onRequest: app.requireAdmin(),
    },
    async (request) => {
      const admin = request.admin;
      if (admin === null) throw new DomainError('UNAUTHENTICATED', 'a bearer token is required');
      return {
        valid: true as const,
        user_id: admin.sub,
        username: admin.username,
        role: admin.role,
        expires_at: new Date(admin.exp * 1000).toISOString(),
      };
    },
  );
}
