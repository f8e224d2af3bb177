import { z } from 'zod';
import type { Queryable } from './pool.ts';
import { exec, many, maybeOne } from './sql.ts';

export const adminRoles = ['super_admin', 'admin'] as const;
export type AdminRole = (typeof adminRoles)[number];

const adminUserRow = z.object({
  id: z.string().uuid(),
  username: z.string(),
  password_hash: z.string(),
  role: z.enum(adminRoles),
  disabled: z.boolean(),
  /** Tokens issued before this instant are refused (a password change, a disable). */
  tokens_valid_after: z.date().nullable(),
});
export type AdminUserRow = z.infer<typeof adminUserRow>;

export function findAdminUserByUsername(db: Queryable, username: string): Promise<AdminUserRow | null> {
  return maybeOne(db, adminUserRow, {
    name: 'admin-user-by-username',
    text: 'SELECT id, username, password_hash, role, disabled, tokens_valid_after FROM admin_users WHERE username = $1',
    values: [username],
  });
}

export function findAdminUserById(db: Queryable, id: string): Promise<AdminUserRow | null> {
  return maybeOne(db, adminUserRow, {
    name: 'admin-user-by-id',
    text: 'SELECT id, username, password_hash, role, disabled, tokens_valid_after FROM admin_users WHERE id = $1',
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

const adminUserSummary = z.object({
  id: z.string().uuid(),
  username: z.string(),
  role: z.enum(adminRoles),
  disabled: z.boolean(),
  created_at: z.date(),
  last_login_at: z.date().nullable(),
});
export type AdminUserSummary = z.infer<typeof adminUserSummary>;

/** Creates a user; null when the username is taken. */
export function createAdminUser(
  db: Queryable,
  user: { username: string; passwordHash: string; role: AdminRole },
): Promise<AdminUserSummary | null> {
  return maybeOne(db, adminUserSummary, {
    name: 'admin-user-create',
    text: `INSERT INTO admin_users (username, password_hash, role) VALUES ($1, $2, $3)
           ON CONFLICT (username) DO NOTHING
           RETURNING id, username, role, disabled, created_at, last_login_at`,
    values: [user.username, user.passwordHash, user.role],
  });
}

/**
 * Disables or enables a user; either way every token issued before now stops working (a token
 * of a re-enabled user was issued to someone who has since been shut out). Null: no such user.
 */
export function setAdminUserDisabled(db: Queryable, username: string, disabled: boolean): Promise<AdminUserSummary | null> {
  return maybeOne(db, adminUserSummary, {
    name: 'admin-user-disable',
    text: `UPDATE admin_users SET disabled = $2, tokens_valid_after = now() WHERE username = $1
           RETURNING id, username, role, disabled, created_at, last_login_at`,
    values: [username, disabled],
  });
}

/** Sets a new password hash and ends every token issued before now. Null: no such user. */
export function setAdminPassword(db: Queryable, username: string, passwordHash: string): Promise<AdminUserSummary | null> {
  return maybeOne(db, adminUserSummary, {
    name: 'admin-user-passwd',
    text: `UPDATE admin_users SET password_hash = $2, tokens_valid_after = now() WHERE username = $1
           RETURNING id, username, role, disabled, created_at, last_login_at`,
    values: [username, passwordHash],
  });
}

/** Every user, by name (bounded: administrators are a handful). */
export function listAdminUsers(db: Queryable): Promise<AdminUserSummary[]> {
  return many(db, adminUserSummary, {
    name: 'admin-user-list',
    text: 'SELECT id, username, role, disabled, created_at, last_login_at FROM admin_users ORDER BY username LIMIT 1000',
  });
}

/** One user by name, its row locked until the transaction ends (a change decided on what it reads). */
export function lockAdminUser(db: Queryable, username: string): Promise<AdminUserSummary | null> {
  return maybeOne(db, adminUserSummary, {
    name: 'admin-user-lock',
    text: 'SELECT id, username, role, disabled, created_at, last_login_at FROM admin_users WHERE username = $1 FOR UPDATE',
    values: [username],
  });
}

/**
 * The active super_admins, their rows locked: two changes that would each leave one of the last
 * two take their turns, and the second sees the first.
 */
export async function lockActiveSuperAdmins(db: Queryable): Promise<string[]> {
  const rows = await many(db, z.object({ username: z.string() }), {
    name: 'admin-user-lock-super',
    text: `SELECT username FROM admin_users WHERE role = 'super_admin' AND NOT disabled ORDER BY id FOR UPDATE`,
  });
  return rows.map((row) => row.username);
}

/** Sets the role; the guard reads the role on every request, so it applies at once. Null: no such user. */
export function setAdminRole(db: Queryable, username: string, role: AdminRole): Promise<AdminUserSummary | null> {
  return maybeOne(db, adminUserSummary, {
    name: 'admin-user-role',
    text: `UPDATE admin_users SET role = $2 WHERE username = $1
           RETURNING id, username, role, disabled, created_at, last_login_at`,
    values: [username, role],
  });
}

/** A page of users by name, and how many there are. */
export async function pageAdminUsers(db: Queryable, page: { limit: number; offset: number }): Promise<{ users: AdminUserSummary[]; total: number }> {
  const [users, total] = await Promise.all([
    many(db, adminUserSummary, {
      name: 'admin-user-page',
      text: 'SELECT id, username, role, disabled, created_at, last_login_at FROM admin_users ORDER BY username LIMIT $1 OFFSET $2',
      values: [page.limit, page.offset],
    }),
    maybeOne(db, z.object({ n: z.number().int() }), { name: 'admin-user-count', text: 'SELECT count(*)::int AS n FROM admin_users' }),
  ]);
  return { users, total: total?.n ?? 0 };
}

/** One user's summary by name (no hash). */
export function findAdminUserSummary(db: Queryable, username: string): Promise<AdminUserSummary | null> {
  return maybeOne(db, adminUserSummary, {
    name: 'admin-user-summary',
    text: 'SELECT id, username, role, disabled, created_at, last_login_at FROM admin_users WHERE username = $1',
    values: [username],
  });
}
