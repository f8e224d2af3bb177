import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  adminPasswordMaxLength,
  adminPasswordMinLength,
  adminPasswordRule,
  adminRoles,
  adminUsernamePattern,
  adminUsernameRule,
  adminUsersPageMax,
  createAdminUsers,
  type AdminUserSummary,
} from '../../services/admin-users.ts';
import { adminErrors, errorResponse } from '../schemas/common.ts';

/**
 * Administrators and their roles for a super_admin (routes beyond the spec, api/extensions.ts):
 * the console's Administrators page. The rules and the changes are services/admin-users.ts, which
 * `npm run admin` uses too; each change is an operation-log entry (ADMIN_USER) naming the admin
 * who made it. docs/operations-console.md, "Administrators".
 */

const tags = ['admin: users'];

const adminUserView = z
  .object({
    id: z.string().uuid(),
    username: z.string(),
    role: z.enum(adminRoles),
    disabled: z.boolean().describe('its logins are refused and its tokens ended'),
    created_at: z.string(),
    last_login_at: z.string().nullable(),
  })
  .meta({ id: 'AdminUser' });

const changeView = z
  .object({
    user: adminUserView,
    changed: z.boolean().describe('false: the user already was in the state asked for; nothing was written'),
  })
  .meta({ id: 'AdminUserChange' });

function toView(row: AdminUserSummary): z.infer<typeof adminUserView> {
  return {
    id: row.id,
    username: row.username,
    role: row.role,
    disabled: row.disabled,
    created_at: row.created_at.toISOString(),
    last_login_at: row.last_login_at?.toISOString() ?? null,
  };
}

const username = z.string().regex(adminUsernamePattern, adminUsernameRule).meta({ examples: ['alice'] });
const password = z.string().min(adminPasswordMinLength, adminPasswordRule).max(adminPasswordMaxLength, adminPasswordRule);
const usernameParams = z.object({ username });

export async function adminUserRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const users = createAdminUsers(app.deps.pool);
  app.addHook('onRequest', app.requireAdmin(['super_admin']));
  const security = [{ bearer: [] }];
  const actor = (request: { admin: { username: string } | null }): string => request.admin?.username ?? 'unknown';
  const superOnly = 'super_admin only (an admin gets 403 `FORBIDDEN`).';

  routes.get(
    '/users',
    {
      schema: {
        tags,
        summary: 'Administrators by name, a page at a time, with their roles and state (super_admin)',
        description: `Every administrator (never a password hash), by username, \`limit\` 1 to ${adminUsersPageMax} (default 50) from \`offset\`; \`total\` counts them all. ${superOnly}`,
        security,
        querystring: z.object({
          limit: z.coerce.number().int().min(1).max(adminUsersPageMax).default(50).meta({ examples: [50] }),
          offset: z.coerce.number().int().min(0).max(1_000_000).default(0).meta({ examples: [0] }),
        }),
        requestExample: { querystring: { limit: 50, offset: 0 } },
        response: { 200: z.object({ users: z.array(adminUserView), total: z.number().int() }).meta({ id: 'AdminUserPage' }), ...adminErrors },
      },
    },
    async (request) => {
      const page = await users.list(request.query);
      return { users: page.users.map(toView), total: page.total };
    },
  );

  routes.post(
    '/users',
    {
      schema: {
        tags,
        summary: 'Create an administrator with a role and a first password (super_admin)',
        description:
          `The password (${adminPasswordMinLength} to ${adminPasswordMaxLength} characters) is stored as an scrypt hash and never shown again. 409 \`ADMIN_USER_EXISTS\` when the name is taken, with its role and state in \`details\`: a create retried after a lost answer ends there, and the details say whether it was this one (no Idempotency-Key: its stored request hash would be a hash of the password). ${superOnly}`,
        security,
        body: z.strictObject({ username, password, role: z.enum(adminRoles) }),
        requestExample: { body: { username: 'alice', password: 'correct horse battery staple', role: 'admin' } },
        response: { 201: adminUserView, 409: errorResponse, ...adminErrors },
      },
    },
    async (request, reply) => {
      const created = await users.create(request.body, actor(request));
      request.log.info({ username: created.username, role: created.role, admin: actor(request) }, 'administrator created');
      return reply.code(201).send(toView(created));
    },
  );

  routes.post(
    '/users/:username/role',
    {
      schema: {
        tags,
        summary: "Change an administrator's role (super_admin); the same role again changes nothing",
        description:
          `The guard reads the role on every request, so it applies to the user's next request. Idempotent: the role it holds already answers 200 with \`changed: false\`. 409 \`LAST_SUPER_ADMIN\` for a demotion of the last active super_admin; 404 \`ADMIN_USER_NOT_FOUND\`. ${superOnly}`,
        security,
        params: usernameParams,
        body: z.strictObject({ role: z.enum(adminRoles) }),
        requestExample: { params: { username: 'alice' }, body: { role: 'super_admin' } },
        response: { 200: changeView, 404: errorResponse, 409: errorResponse, ...adminErrors },
      },
    },
    async (request) => {
      const change = await users.setRole(request.params.username, request.body.role, actor(request));
      request.log.info({ username: change.user.username, role: change.user.role, changed: change.changed, admin: actor(request) }, 'administrator role set');
      return { user: toView(change.user), changed: change.changed };
    },
  );

  for (const [action, disabled] of [
    ['disable', true],
    ['enable', false],
  ] as const) {
    routes.post(
      `/users/:username/${action}`,
      {
        schema: {
          tags,
          summary:
            action === 'disable'
              ? "Disable an administrator: its logins are refused and its tokens end now (super_admin)"
              : 'Enable a disabled administrator: it may log in again (super_admin)',
          description:
            `${action === 'disable' ? 'Every token issued before now stops working at its next request. 409 `LAST_SUPER_ADMIN` for the last active super_admin (disabling yourself when you are is refused the same way). ' : 'Its earlier tokens stay ended: it logs in again. '}` +
            `Idempotent: a user already ${action}d answers 200 with \`changed: false\` and nothing is written. 404 \`ADMIN_USER_NOT_FOUND\`. ${superOnly}`,
          security,
          params: usernameParams,
          requestExample: { params: { username: 'alice' } },
          response: { 200: changeView, 404: errorResponse, 409: errorResponse, ...adminErrors },
        },
      },
      async (request) => {
        const change = await users.setDisabled(request.params.username, disabled, actor(request));
        request.log.info({ username: change.user.username, changed: change.changed, admin: actor(request) }, `administrator ${action}d`);
        return { user: toView(change.user), changed: change.changed };
      },
    );
  }

  routes.post(
    '/users/:username/password',
    {
      schema: {
        tags,
        summary: "Set an administrator's password; its tokens end now (super_admin)",
        description: `For a forgotten password (\`npm run admin -- passwd\` does the same). Stored as an scrypt hash; every token issued before now stops working. 404 \`ADMIN_USER_NOT_FOUND\`. ${superOnly}`,
        security,
        params: usernameParams,
        body: z.strictObject({ password }),
        requestExample: { params: { username: 'alice' }, body: { password: 'correct horse battery staple' } },
        response: { 200: adminUserView, 404: errorResponse, ...adminErrors },
      },
    },
    async (request) => {
      const user = await users.setPassword(request.params.username, request.body.password, actor(request));
      request.log.info({ username: user.username, admin: actor(request) }, 'administrator password set');
      return toView(user);
    },
  );
}
