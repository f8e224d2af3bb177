import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { adminRoles, findAdminUserByUsername, recordAdminLogin } from '../../db/admin-users.ts';
import { decoyPasswordHash, verifyPassword } from '../../infra/passwords.ts';
import { DomainError } from '../../src/errors.ts';
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

  routes.post(
    '/login',
    {
      schema: {
        tags: ['auth'],
        summary: 'Log in an administrator; answers a JWT valid 15 minutes',
        body: loginRequest,
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
      const { username, password } = request.body;
      const user = await findAdminUserByUsername(app.deps.pool, username);
      // The same scrypt work whether or not the user exists: unknown user and wrong password are
      // indistinguishable, in the answer and in its timing.
      const passwordOk = await verifyPassword(password, user?.password_hash ?? decoyPasswordHash);
      if (user === null || user.disabled || !passwordOk) {
        throw new DomainError('INVALID_CREDENTIALS', 'invalid username or password');
      }
      await recordAdminLogin(app.deps.pool, user.id);
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
