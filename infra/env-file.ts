import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseEnv } from 'node:util';

/**
 * Reads `.env` of the current directory (where npm runs every script: the project's root) into
 * process.env, as `.env.example` invites: copy it to `.env` and change what you need. A variable
 * already set in the environment wins over the file (Node's own rule for `--env-file` and
 * `process.loadEnvFile`, which this uses): `PORT=9000 npm start` means 9000 whatever `.env` says.
 * An empty value (`FOO=`) counts as unset (infra/config.ts). No file: nothing happens.
 *
 * Called first by every entry point that reads the configuration (`npm start`, the API, the
 * worker, `npm run migrate`, `npm run admin`). Answers what it did, for the entry to say.
 */
export function loadDotEnv(file = path.resolve('.env')): { file: string; names: string[]; overridden: string[] } | null {
  if (!existsSync(file)) return null;
  const names = Object.keys(parseEnv(readFileSync(file, 'utf8')));
  const overridden = names.filter((name) => process.env[name] !== undefined);
  process.loadEnvFile(file);
  return { file, names, overridden };
}
