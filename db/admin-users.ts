import { z } from 'zod';
import type { Queryable } from './pool.ts';
import { exec, maybeOne } from './sql.ts';

export const adminRoles = ['super_admin', 'admin'] as const;
export type AdminRole = (typeof adminRoles)[number];

const adminUserRow = z.object({
  id: z.string().uuid(),
  username: z.string(),
  password_hash: z.string(),
  role: z.enum(adminRoles),
  disabled: z.boolean(),
});
export type AdminUserRow = z.infer<typeof adminUserRow>;

export function findAdminUserByUsername(db: Queryable, username: string): Promise<AdminUserRow | null> {
  return maybeOne(db, adminUserRow, {
    name: 'admin-user-by-username',
    text: 'SELECT id, username, password_hash, role, disabled FROM admin_users WHERE username = $1',
    values: [username],
  });
}

export function findAdminUserById(db: Queryable, id: string): Promise<AdminUserRow | null> {
  return maybeOne(db, adminUserRow, {
    name: 'admin-user-by-id',
    text: 'SELECT id, username, password_hash, role, disabled FROM admin_users WHERE id = $1',
    values: [id],
  });
}

/** Creates the user unless one with that username exists; returns whether it created one. */
export async function ensureAdminUser(
  db: Queryable,
  user: { username: string; passwordHash: string; role: AdminRole },
): Promise<boolean> {
  const created = await exec(db, {
    name: 'admin-user-ensure',
    text: `INSERT INTO admin_users (username, password_hash, role) VALUES ($1, $2, $3)
           ON CONFLICT (username) DO NOTHING`,
    values: [user.username, user.passwordHash, user.role],
  });
  return created === 1;
}

export async function recordAdminLogin(db: Queryable, id: string): Promise<void> {
  await exec(db, { name: 'admin-user-login', text: 'UPDATE admin_users SET last_login_at = now() WHERE id = $1', values: [id] });
}
