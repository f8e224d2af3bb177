import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';

/**
 * Pieces shared by the supervisors that start a whole stack on one machine: `npm start`
 * (scripts/dev.ts) and `npm run start:cluster` (scripts/cluster.ts).
 */

/** A secret kept in a file of the data folder (created once, readable by its owner only). */
export async function loadOrCreateSecret(file: string, make: () => string): Promise<{ value: string; created: boolean }> {
  if (existsSync(file)) return { value: (await readFile(file, 'utf8')).trim(), created: false };
  const value = make();
  await writeFile(file, `${value}\n`, { mode: 0o600 });
  return { value, created: true };
}

/** Polls `url` until it answers 200 (true), `timeoutMs` passes or `giveUp()` says so (false). */
export async function waitForReady(url: string, timeoutMs: number, giveUp: () => boolean): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !giveUp()) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(3000) });
      if (response.status === 200) return true;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}
