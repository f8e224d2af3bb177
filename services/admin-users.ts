import {
  adminRoles,
  createAdminUser,
  findAdminUserSummary,
  lockActiveSuperAdmins,
  lockAdminUser,
  pageAdminUsers,
  setAdminPassword,
  setAdminRole,
  setAdminUserDisabled,
  type AdminRole,
  type AdminUserSummary,
} from '../db/admin-users.ts';
import { loggedOperation } from '../db/operation-log.ts';
import { withTransaction, type Pool, type PoolClient } from '../db/pool.ts';
import { hashPassword } from '../infra/passwords.ts';
import { DomainError } from '../src/errors.ts';

/**
 * Administrators, for both doors: the super_admin routes (`/api/v1/admin/users`, the console's
 * Administrators page) and `npm run admin` (scripts/admin.ts). One home for the rules (a name's
 * and a password's form, the last active super_admin kept) and for the changes, each an entry of
 * the operation log (type ADMIN_USER, reference `admin:<username>`, the acting admin or
 * `cli:<user>` as actor). docs/operations-console.md, "Administrators".
 */

export { adminRoles, type AdminRole, type AdminUserSummary };

export const adminUsernamePattern = /^[A-Za-z0-9._-]{3,64}$/;
export const adminUsernameRule = 'a username is 3 to 64 letters, digits, dots, dashes or underscores';
export const adminPasswordMinLength = 12;
export const adminPasswordMaxLength = 256;
export const adminPasswordRule = `a password is ${adminPasswordMinLength} to ${adminPasswordMaxLength} characters`;
/** The routes' page bound; the command line lists every user (administrators are a handful). */
export const adminUsersPageMax = 200;

/** What is wrong with a username, or null. */
export function adminUsernameProblem(username: string): string | null {
  return adminUsernamePattern.test(username) ? null : adminUsernameRule;
}

/** What is wrong with a password, or null. */
export function adminPasswordProblem(password: string): string | null {
  return password.length < adminPasswordMinLength || password.length > adminPasswordMaxLength ? adminPasswordRule : null;
}

export interface AdminUserChange {
  user: AdminUserSummary;
  /** False when the user already was in the state asked for (nothing written, tokens kept). */
  changed: boolean;
}

/** The reference of an administrator in the operation log. */
export function adminUserReference(username: string): string {
  return `admin:${username}`;
}

export function createAdminUsers(pool: Pool) {
  function notFound(username: string): DomainError {
    return new DomainError('ADMIN_USER_NOT_FOUND', `no administrator named ${username}`, { username });
  }

  /**
   * Locks the active super_admins, then the user (always in that order, so two changes at once
   * queue instead of deadlocking): what a change that could remove a super_admin decides on.
   */
  async function lockForChange(client: PoolClient, username: string): Promise<{ user: AdminUserSummary; activeSuperAdmins: string[] }> {
    const activeSuperAdmins = await lockActiveSuperAdmins(client);
    const user = await lockAdminUser(client, username);
    if (user === null) throw notFound(username);
    return { user, activeSuperAdmins };
  }

  /** Refuses a change that would leave no active super_admin. */
  function keepOneSuperAdmin(user: AdminUserSummary, activeSuperAdmins: readonly string[], action: string): void {
    if (user.role !== 'super_admin' || user.disabled) return;
    if (activeSuperAdmins.filter((name) => name !== user.username).length === 0) {
      throw new DomainError('LAST_SUPER_ADMIN', `${user.username} is the last active super_admin: ${action} would leave nobody to manage administrators`, {
        username: user.username,
      });
    }
  }

  function logged<T>(step: string, username: string, actor: string, action: () => Promise<T>): Promise<T> {
    return loggedOperation(pool, { operationType: 'ADMIN_USER', step, ownerId: null, referenceId: adminUserReference(username), actor }, action);
  }

  return {
    list(page: { limit: number; offset: number }) {
      return pageAdminUsers(pool, page);
    },

    async get(username: string): Promise<AdminUserSummary> {
      const row = await findAdminUserSummary(pool, username);
      if (row === null) throw notFound(username);
      return row;
    },

    /** A new administrator; 409 ADMIN_USER_EXISTS when the name is taken (with its role and state). */
    create(input: { username: string; password: string; role: AdminRole }, actor: string): Promise<AdminUserSummary> {
      return logged('create', input.username, actor, async () => {
        const created = await createAdminUser(pool, { username: input.username, passwordHash: await hashPassword(input.password), role: input.role });
        if (created !== null) return created;
        const existing = await findAdminUserSummary(pool, input.username);
        throw new DomainError('ADMIN_USER_EXISTS', `an administrator named ${input.username} exists already`, {
          username: input.username,
          ...(existing === null ? {} : { role: existing.role, disabled: existing.disabled }),
        });
      });
    },

    /** Sets the role; the same role again changes nothing. */
    setRole(username: string, role: AdminRole, actor: string): Promise<AdminUserChange> {
      return logged(`role ${role}`, username, actor, () =>
        withTransaction(pool, async (client) => {
          const { user, activeSuperAdmins } = await lockForChange(client, username);
          if (user.role === role) return { user, changed: false };
          if (role !== 'super_admin') keepOneSuperAdmin(user, activeSuperAdmins, 'a demotion');
          const updated = await setAdminRole(client, username, role);
          if (updated === null) throw notFound(username);
          return { user: updated, changed: true };
        }),
      );
    },

    /**
     * Disables (its logins refused, its tokens ended) or enables a user. Asking for the state it
     * is in changes nothing: an enabled user's tokens are not ended by a second enable.
     */
    setDisabled(username: string, disabled: boolean, actor: string): Promise<AdminUserChange> {
      return logged(disabled ? 'disable' : 'enable', username, actor, () =>
        withTransaction(pool, async (client) => {
          const { user, activeSuperAdmins } = await lockForChange(client, username);
          if (user.disabled === disabled) return { user, changed: false };
          if (disabled) keepOneSuperAdmin(user, activeSuperAdmins, 'disabling it');
          const updated = await setAdminUserDisabled(client, username, disabled);
          if (updated === null) throw notFound(username);
          return { user: updated, changed: true };
        }),
      );
    },

    /** A new password; every token issued before now stops working. */
    setPassword(username: string, password: string, actor: string): Promise<AdminUserSummary> {
      return logged('password', username, actor, async () => {
        const updated = await setAdminPassword(pool, username, await hashPassword(password));
        if (updated === null) throw notFound(username);
        return updated;
      });
    },
  };
}
