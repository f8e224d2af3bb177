import { readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import { listLoginLockouts, unlockLogin, type LoginThrottleRow } from '../db/admin-login-throttle.ts';
import { listAdminUsers } from '../db/admin-users.ts';
import { countFlags, flagsMax, getFlag, listFlags, upsertFlag, type FlagRow } from '../db/feature-flags.ts';
import { publishFeeSchedule } from '../db/fees.ts';
import { createPool, type Pool } from '../db/pool.ts';
import {
  adminPasswordMaxLength,
  adminPasswordProblem,
  adminRoles,
  adminUsernameProblem,
  createAdminUsers,
  type AdminRole,
} from '../services/admin-users.ts';
import { DomainError } from '../src/errors.ts';
import { checkRules, feeRails, feeTiers, type FeeRule } from '../src/fees/schedule.ts';
import { percentToBasisPoints } from '../src/ops/canary.ts';
import { z } from 'zod';

/**
 * `npm run admin -- <command>`: the operator's administration commands, straight on the
 * database (DATABASE_URL; no API login needed, so they work for an account that is locked out).
 * Administrators are managed here and by a super_admin in the console (`/api/v1/admin/users`):
 * both go through services/admin-users.ts, its rules and its operation-log entries (actor
 * `cli:<user>`). Passwords are read from standard input, never from the command line, and stored
 * as scrypt hashes. One entry per command in `commands`. Exit 0: done; 1: refused (no such user,
 * name taken, the last active super_admin); 2: usage or connection problem.
 */

interface Command {
  usage: string;
  summary: string;
  run(args: string[], context: Context): Promise<number>;
}

interface Context {
  pool: Pool;
  readPassword(prompt: string): Promise<string>;
  out(line: string): void;
  err(line: string): void;
}

class UsageError extends Error {}

const passwordMaxLength = adminPasswordMaxLength;

function username(args: string[]): string {
  const [name, ...rest] = args;
  if (name === undefined || rest.length > 0) throw new UsageError('exactly one username is required');
  const problem = adminUsernameProblem(name);
  if (problem !== null) throw new UsageError(problem);
  return name;
}

async function newPassword(context: Context): Promise<string> {
  const password = await context.readPassword('new password: ');
  const problem = adminPasswordProblem(password);
  if (problem !== null) throw new UsageError(problem);
  return password;
}

function operator(): string {
  try {
    return `cli:${userInfo().username}`.slice(0, 100);
  } catch {
    return 'cli';
  }
}

function showFlag(row: FlagRow): string {
  const rules = [
    row.min_reputation_tier === null ? null : `min tier ${row.min_reputation_tier}`,
    row.exclude_blocked_keys ? 'no blocked keys' : null,
  ].filter((rule) => rule !== null);
  return `${row.name}  ${row.enabled ? 'enabled ' : 'disabled'}  ${row.rollout_percent.padStart(6)}% of ${row.unit}s` +
    `${rules.length === 0 ? '' : `  (${rules.join(', ')})`}  updated ${row.updated_at.toISOString()} by ${row.updated_by}\n    ${row.description}`;
}

const lockoutsListedMax = 100;

const minorUnits = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const feeScheduleFile = z.strictObject({
  description: z.string().min(1).max(500),
  rules: z
    .array(
      z.strictObject({
        rail: z.enum(feeRails),
        tier: z.enum(feeTiers).nullable(),
        fixed_minor: minorUnits,
        rate_bps: z.number().int().min(0).max(10_000),
        min_minor: minorUnits,
        max_minor: minorUnits.nullable(),
      }),
    )
    .min(1)
    .max(feeRails.length * (feeTiers.length + 1)),
});

function describeLockout(row: LoginThrottleRow): string {
  const state = row.locked ? 'locked' : row.wait_ms > 0 ? 'throttled' : 'counting';
  const wait = row.wait_ms > 0 ? `, ${Math.ceil(row.wait_ms / 1000)} s left` : '';
  return `${row.username}: ${state}, ${row.failures} consecutive failed login(s)${wait}, last attempt ${row.last_attempt_at.toISOString()}`;
}

function booleanOption(value: string | undefined, name: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'true' || value === 'on') return true;
  if (value === 'false' || value === 'off') return false;
  throw new UsageError(`--${name} is true or false`);
}

/** `disable` and `enable`: one flag of the user, set or cleared (the state it is in already: nothing to do). */
function disabledCommand(disabled: boolean, summary: string, done: (username: string) => string): Command {
  return {
    usage: `${disabled ? 'disable' : 'enable'} <username>`,
    summary,
    async run(args, context) {
      const name = username(args);
      const change = await createAdminUsers(context.pool).setDisabled(name, disabled, operator());
      context.out(change.changed ? done(change.user.username) : `${change.user.username} is ${disabled ? 'disabled' : 'enabled'} already: nothing changed`);
      return 0;
    },
  };
}

const commands: Readonly<Record<string, Command>> = {
  create: {
    usage: 'create <username> --role admin|super_admin',
    summary: 'create an administrator (password on standard input)',
    async run(args, context) {
      const { positionals, values } = parseArgs({ args, allowPositionals: true, options: { role: { type: 'string' } } });
      const name = username(positionals);
      const role = values.role;
      if (role === undefined || !(adminRoles as readonly string[]).includes(role)) throw new UsageError('--role admin or --role super_admin is required');
      const password = await newPassword(context);
      const created = await createAdminUsers(context.pool).create({ username: name, password, role: role as AdminRole }, operator());
      context.out(`created ${created.role} ${created.username} (${created.id})`);
      return 0;
    },
  },
  role: {
    usage: 'role <username> admin|super_admin',
    summary: "change an administrator's role (the last active super_admin keeps its role)",
    async run(args, context) {
      const [name, role, ...rest] = args;
      if (name === undefined || role === undefined || rest.length > 0) throw new UsageError('a username and a role are required');
      const checked = username([name]);
      if (!(adminRoles as readonly string[]).includes(role)) throw new UsageError('the role is admin or super_admin');
      const change = await createAdminUsers(context.pool).setRole(checked, role as AdminRole, operator());
      context.out(change.changed ? `${change.user.username} is now ${change.user.role}` : `${change.user.username} is ${change.user.role} already: nothing changed`);
      return 0;
    },
  },
  disable: disabledCommand(true, 'refuse the user\'s logins and end its tokens', (name) => `disabled ${name}: its tokens no longer work`),
  enable: disabledCommand(false, 'let a disabled user log in again', (name) => `enabled ${name}`),
  passwd: {
    usage: 'passwd <username>',
    summary: 'set a new password (on standard input) and end the user\'s tokens',
    async run(args, context) {
      const name = username(args);
      const password = await newPassword(context);
      const user = await createAdminUsers(context.pool).setPassword(name, password, operator());
      context.out(`changed the password of ${user.username}: its earlier tokens no longer work`);
      return 0;
    },
  },
  unlock: {
    usage: 'unlock <username>',
    summary: 'lift the login throttle or lockout of an account (its failures are forgotten)',
    async run(args, context) {
      const [name, ...rest] = args;
      if (name === undefined || rest.length > 0 || !/^.{1,64}$/su.test(name)) throw new UsageError('one username of 1 to 64 characters is required');
      const row = await unlockLogin(context.pool, name);
      context.out(row === null ? `${name}: no failed logins recorded; nothing to lift` : `unlocked ${describeLockout(row)}`);
      return 0;
    },
  },
  'fees-publish': {
    usage: 'fees-publish <schedule.json>',
    summary:
      'publish a new fee schedule version (the next number) from a JSON file {"description", "rules": [{"rail", "tier" (null: every tier), ' +
      '"fixed_minor", "rate_bps", "min_minor", "max_minor" (null: none)}]}; earlier versions and their consents stay (docs/limits-and-fees.md)',
    async run(args, context) {
      const [file, ...rest] = args;
      if (file === undefined || rest.length > 0) throw new UsageError('exactly one JSON file is required');
      let parsed: z.infer<typeof feeScheduleFile>;
      try {
        parsed = feeScheduleFile.parse(JSON.parse(await readFile(file, 'utf8')));
      } catch (error) {
        throw new UsageError(`${file}: not a fee schedule: ${error instanceof Error ? error.message.slice(0, 500) : String(error)}`);
      }
      const rules: FeeRule[] = parsed.rules.map((rule) => ({
        rail: rule.rail,
        tier: rule.tier,
        fixedMinor: BigInt(rule.fixed_minor),
        rateBps: rule.rate_bps,
        minMinor: BigInt(rule.min_minor),
        maxMinor: rule.max_minor === null ? null : BigInt(rule.max_minor),
      }));
      const problem = checkRules(rules);
      if (problem !== null) throw new UsageError(`${file}: ${problem}`);
      const version = await publishFeeSchedule(context.pool, { description: parsed.description, rules });
      context.out(`published fee schedule version ${version} (${rules.length} rules): it is the current version; owners consent to it with POST /api/v1/fees/consent`);
      return 0;
    },
  },
  lockouts: {
    usage: 'lockouts',
    summary: `accounts locked or waiting now (at most ${lockoutsListedMax})`,
    async run(args, context) {
      if (args.length > 0) throw new UsageError('lockouts takes no arguments');
      const rows = await listLoginLockouts(context.pool, lockoutsListedMax);
      if (rows.length === 0) context.out('no account is locked or waiting');
      for (const row of rows) context.out(describeLockout(row));
      return 0;
    },
  },
  list: {
    usage: 'list',
    summary: 'every administrator with its role and state',
    async run(args, context) {
      if (args.length > 0) throw new UsageError('list takes no arguments');
      for (const user of await listAdminUsers(context.pool)) {
        context.out(`${user.username.padEnd(24)} ${user.role.padEnd(11)} ${user.disabled ? 'disabled' : 'active  '} last login ${user.last_login_at?.toISOString() ?? 'never'}`);
      }
      return 0;
    },
  },
  flag: {
    usage: 'flag list | flag set <name> [--description TEXT] [--enabled true|false] [--percent P] [--unit device|mesh] [--min-tier TIER|none] [--exclude-blocked true|false]',
    summary: 'show or change the canary rollout of a feature flag',
    async run(args, context) {
      const [sub, ...rest] = args;
      if (sub === 'list' && rest.length === 0) {
        for (const row of await listFlags(context.pool)) context.out(showFlag(row));
        return 0;
      }
      if (sub !== 'set') throw new UsageError('flag list, or flag set <name> ...');
      const { positionals, values } = parseArgs({
        args: rest,
        allowPositionals: true,
        options: {
          description: { type: 'string' },
          enabled: { type: 'string' },
          percent: { type: 'string' },
          unit: { type: 'string' },
          'min-tier': { type: 'string' },
          'exclude-blocked': { type: 'string' },
        },
      });
      const [name, ...extra] = positionals;
      if (name === undefined || extra.length > 0 || !/^[a-z][a-z0-9_]{1,62}$/.test(name)) {
        throw new UsageError('one flag name (lower case letters, digits, underscores) is required');
      }
      if (values.percent !== undefined) {
        try {
          percentToBasisPoints(values.percent);
        } catch {
          throw new UsageError('--percent is 0 to 100 with at most 2 decimals');
        }
      }
      if (values.unit !== undefined && values.unit !== 'device' && values.unit !== 'mesh') throw new UsageError('--unit is device or mesh');
      if (values.description !== undefined && (values.description.length < 1 || values.description.length > 500)) {
        throw new UsageError('--description is 1 to 500 characters');
      }
      const minTier = values['min-tier'];
      if (minTier !== undefined && (minTier.length > 32 || minTier.length < 1)) throw new UsageError('--min-tier is a tier name or none');
      const existing = await getFlag(context.pool, name);
      if (existing === null) {
        if (values.description === undefined) throw new UsageError(`${name} is a new flag: --description is required`);
        if ((await countFlags(context.pool)) >= flagsMax) {
          context.err(`admin: ${flagsMax} flags exist already; the table is configuration, not data`);
          return 1;
        }
      }
      const row = await upsertFlag(context.pool, {
        name,
        description: values.description,
        enabled: booleanOption(values.enabled, 'enabled'),
        rolloutPercent: values.percent,
        unit: values.unit as 'device' | 'mesh' | undefined,
        minReputationTier: minTier === undefined ? undefined : minTier === 'none' ? null : minTier,
        excludeBlockedKeys: booleanOption(values['exclude-blocked'], 'exclude-blocked'),
        updatedBy: operator(),
      });
      context.out(showFlag(row));
      return 0;
    },
  },
};

function usageText(): string {
  return [
    'usage: npm run admin -- <command>',
    ...Object.values(commands).map((command) => `  ${command.usage}\n      ${command.summary}`),
    'Passwords are read from standard input (a prompt without echo on a terminal), e.g.',
    "  printf '%s\\n' \"$NEW_PASSWORD\" | npm run admin -- create alice --role admin",
    'DATABASE_URL must name the database (for the embedded one of npm start:',
    '  DATABASE_URL=postgres://postgres:$(cat .data/postgres-password)@127.0.0.1:5433/settlement).',
  ].join('\n');
}

/** The password: standard input's first line; on a terminal, typed without echo. */
async function readPassword(prompt: string): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    let text = '';
    for await (const chunk of stdin) {
      text += String(chunk);
      if (text.includes('\n') || text.length > passwordMaxLength + 2) break;
    }
    return (text.split('\n')[0] ?? '').replace(/\r$/, '');
  }
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.resume();
  return new Promise((resolve, reject) => {
    let typed = '';
    const onData = (chunk: Buffer): void => {
      for (const char of chunk.toString('utf8')) {
        if (char === '\r' || char === '\n') {
          finish();
          resolve(typed);
          return;
        }
        if (char === '\u0003') {
          finish();
          reject(new UsageError('cancelled'));
          return;
        }
        if (char === '\u007f') typed = typed.slice(0, -1);
        else typed += char;
      }
    };
    const finish = (): void => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
    };
    stdin.on('data', onData);
  });
}

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  const command = name === undefined ? undefined : commands[name];
  if (command === undefined) {
    process.stderr.write(`${name === undefined || name === '--help' || name === '-h' ? '' : `unknown command: ${name}\n`}${usageText()}\n`);
    return 2;
  }
  const databaseUrl = process.env.DATABASE_URL;
  if (databaseUrl === undefined || databaseUrl === '') {
    process.stderr.write(`DATABASE_URL is not set.\n${usageText()}\n`);
    return 2;
  }
  const pool = createPool({ connectionString: databaseUrl, max: 1, applicationName: 'admin-cli' });
  const context: Context = {
    pool,
    readPassword,
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  };
  try {
    try {
      await pool.query('SELECT 1');
    } catch (error) {
      process.stderr.write(`cannot connect to DATABASE_URL: ${error instanceof Error ? error.message : String(error)}\n`);
      return 2;
    }
    return await command.run(args, context);
  } catch (error) {
    if (error instanceof DomainError) {
      // A refusal of the shared rules (services/admin-users.ts): no such user, name taken, the last super_admin.
      const hint = error.code === 'ADMIN_USER_EXISTS' ? ' (passwd changes its password)' : '';
      process.stderr.write(`admin: ${error.message}${hint}\n`);
      return 1;
    }
    if (error instanceof UsageError || (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'))) {
      process.stderr.write(`${error.message}\nusage: npm run admin -- ${command.usage}\n`);
      return 2;
    }
    if (error instanceof Error && 'code' in error && (error.code === 'ECONNREFUSED' || error.code === '3D000' || error.code === '28P01')) {
      process.stderr.write(`cannot connect to DATABASE_URL: ${error.message}\n`);
      return 2;
    }
    throw error;
  } finally {
    await pool.end();
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`admin: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 2;
  },
);
