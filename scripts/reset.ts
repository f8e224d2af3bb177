import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadDotEnv } from '../infra/env-file.ts';
import { ConfigError, loadConfig } from '../infra/config.ts';
import { runs, stateFileName, type DevState } from '../infra/dev-state.ts';
import { postmasterPid } from '../infra/embedded-postgres.ts';
import { isAlive } from '../infra/pids.ts';

/**
 * `npm run reset`: wipes what `npm start` keeps in DATA_DIR (default .data/): the embedded
 * PostgreSQL's ledger, the Temporal dev server's workflows, the gateway simulator's state, the
 * generated development secrets and the mail sink's messages, so that the next `npm start` begins
 * from nothing. With `--wallets` it also removes `.wallets/`, the quick start's wallet folders
 * (their PLCs mean nothing to a wiped server). Asks first (type "yes") unless `--yes` is given; off
 * a terminal, without `--yes`, it refuses.
 *
 * It refuses while `npm start` runs on that folder (its state file names a live supervisor), while
 * processes an earlier `npm start` left behind still run, or while a PostgreSQL still serves the
 * folder's cluster: deleting files under a running database corrupts nothing we keep, but the
 * processes would go on answering from memory. It also refuses a folder that does not look like
 * one `npm start` made (a DATA_DIR pointed at the wrong place must not cost anyone their files). An
 * external DATABASE_URL or TEMPORAL_ADDRESS is never touched: only the folder.
 *
 * Exit status: 0 wiped (or nothing to wipe), 1 refused, 2 usage.
 */

const root = fileURLToPath(new URL('..', import.meta.url));

/**
 * What `npm start` writes in its data folder, by name or name prefix (`postgres-password`,
 * `postgres.log`, `temporal.sqlite-wal`, `npm-start.json.<pid>.tmp`); a folder holding anything
 * else is not one of its.
 */
const knownEntries = ['postgres', 'temporal.sqlite', 'gateway-simulator.sqlite', 'jwt-secret', 'admin-password', 'pin-pepper', 'mail', stateFileName];

function isKnownEntry(entry: string): boolean {
  return knownEntries.some((known) => entry === known || entry.startsWith(`${known}-`) || entry.startsWith(`${known}.`));
}

export const resetUsage = `usage: npm run reset -- [--yes] [--wallets]

Wipes npm start's data folder (DATA_DIR, default .data/): the embedded PostgreSQL (ledger, accounts,
PLCs), the Temporal dev server's workflows, the gateway simulator's state, the generated development
secrets (admin password, JWT secret, PIN pepper) and the mail sink's messages. The next npm start
begins from nothing: a new admin password, empty balances.

  --yes       do not ask (needed when not run from a terminal)
  --wallets   also remove .wallets/, the quick start's wallet folders
  --help      this text

Refuses while npm start (or anything it left running) uses the folder: stop it first (Ctrl-C).
An external DATABASE_URL or TEMPORAL_ADDRESS is not touched.`;

class Refusal extends Error {
  readonly exitCode: 1 | 2;

  constructor(message: string, exitCode: 1 | 2) {
    super(message);
    this.exitCode = exitCode;
  }
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Why the folder is in use, or null. */
function inUse(dataDir: string): string | null {
  const stateFile = path.join(dataDir, stateFileName);
  if (existsSync(stateFile)) {
    let state: DevState | null = null;
    try {
      state = JSON.parse(readFileSync(stateFile, 'utf8')) as DevState;
    } catch {
      state = null;
    }
    if (state !== null && runs(state.pid, 'dev.ts')) {
      return `npm start is running with this data folder (pid ${state.pid}, since ${state.startedAt}): stop it first (Ctrl-C in its terminal, or kill -INT ${state.pid})`;
    }
    const left = Object.entries(state?.processes ?? {}).filter(([, pid]) => pid !== null && isAlive(pid));
    if (left.length > 0) {
      return `an earlier npm start ended without stopping and left ${left.map(([name, pid]) => `${name} (pid ${String(pid)})`).join(', ')} running: run npm start once (it stops them first) and Ctrl-C it, then reset`;
    }
  }
  const postgres = postmasterPid(path.join(dataDir, 'postgres'));
  if (postgres !== null && isAlive(postgres)) {
    return `a PostgreSQL (pid ${postgres}) still serves ${path.join(dataDir, 'postgres')}: run npm start once (it stops a leftover server first) and Ctrl-C it, then reset`;
  }
  return null;
}

function describe(dataDir: string, entries: readonly string[]): string {
  const sized = entries.map((entry) => {
    const full = path.join(dataDir, entry);
    return statSync(full).isDirectory() ? `${entry}/` : entry;
  });
  return sized.join(', ');
}

async function confirmed(question: string): Promise<boolean> {
  const prompt = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return (await prompt.question(question)).trim().toLowerCase() === 'yes';
  } finally {
    prompt.close();
  }
}

async function main(argv: readonly string[]): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({ args: [...argv], options: { yes: { type: 'boolean' }, wallets: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } }, strict: true }));
  } catch (error) {
    throw new Refusal(`${error instanceof Error ? error.message : String(error)}\n\n${resetUsage}`, 2);
  }
  if (values.help === true) {
    say(resetUsage);
    return;
  }
  loadDotEnv();
  const config = loadConfig();
  const dataDir = path.resolve(root, config.DATA_DIR);
  const walletsDir = path.join(root, '.wallets');
  if ([path.parse(dataDir).root, homedir(), root].includes(dataDir)) throw new Refusal(`DATA_DIR is ${dataDir}: refusing to wipe it`, 1);

  const entries = existsSync(dataDir) ? readdirSync(dataDir) : [];
  const foreign = entries.filter((entry) => !isKnownEntry(entry));
  if (foreign.length > 0) {
    throw new Refusal(`${dataDir} holds ${foreign.slice(0, 5).join(', ')}${foreign.length > 5 ? ', ...' : ''}, which npm start never writes: is DATA_DIR right? Nothing was removed`, 1);
  }
  const busy = inUse(dataDir);
  if (busy !== null) throw new Refusal(`${busy}. Nothing was removed`, 1);
  const wipeWallets = values.wallets === true && existsSync(walletsDir);
  if (entries.length === 0 && !wipeWallets) {
    say(`nothing to reset: ${dataDir} is ${existsSync(dataDir) ? 'empty' : 'not there'}${config.DATABASE_URL === undefined ? '' : ' (DATABASE_URL is external: not touched)'}`);
    return;
  }
  const what = [...(entries.length === 0 ? [] : [`${dataDir} (${describe(dataDir, entries)})`]), ...(wipeWallets ? [`${walletsDir} (the quick start's wallets)`] : [])];
  say(`this removes ${what.join(' and ')}`);
  if (config.DATABASE_URL !== undefined || config.TEMPORAL_ADDRESS !== undefined) say('DATABASE_URL / TEMPORAL_ADDRESS point elsewhere: those are not touched, only the folder');
  if (values.yes !== true) {
    if (process.stdin.isTTY !== true) throw new Refusal('not a terminal, so nobody can confirm: run it again with --yes (npm run reset -- --yes)', 2);
    if (!(await confirmed('type "yes" to remove it: '))) throw new Refusal('not confirmed: nothing was removed', 1);
  }
  // Checked again: a start in the meantime must not lose its folder under it.
  const again = inUse(dataDir);
  if (again !== null) throw new Refusal(`${again}. Nothing was removed`, 1);
  for (const entry of entries) rmSync(path.join(dataDir, entry), { recursive: true, force: true });
  if (wipeWallets) rmSync(walletsDir, { recursive: true, force: true });
  say(`reset: ${what.join(' and ')} removed; the next npm start begins from nothing (a new admin password in ${path.join(config.DATA_DIR, 'admin-password')})`);
}

try {
  await main(process.argv.slice(2));
} catch (error) {
  if (error instanceof Refusal) {
    process.stderr.write(`reset: ${error.message}\n`);
    process.exitCode = error.exitCode;
  } else if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exitCode = 2;
  } else {
    throw error;
  }
}
