import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from './config.ts';
import { startSmtpSink } from './smtp-sink.ts';

/**
 * What `npm start` adds for the security routes when nothing is configured, outside production:
 * a PIN_PEPPER generated once into DATA_DIR/pin-pepper (kept across restarts, or every stored PIN
 * would stop verifying), and an SMTP sink on SMTP_SINK_PORT that keeps each message as an .eml
 * file under DATA_DIR/mail and prints its path, so a PIN reset works end to end. Sets the
 * children's PIN_PEPPER and SMTP_URL in `env`; `stop` closes the sink.
 */
export async function prepareDevelopmentSecurity(options: {
  config: Config;
  dataDir: string;
  env: Record<string, string>;
  say: (line: string) => void;
}): Promise<{ stop: () => Promise<void> }> {
  const { config, dataDir, env, say } = options;
  if (config.APP_ENV === 'production') return { stop: async () => {} };
  if (config.PIN_PEPPER === undefined) {
    const file = path.join(dataDir, 'pin-pepper');
    if (!existsSync(file)) await writeFile(file, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
    env.PIN_PEPPER = (await readFile(file, 'utf8')).trim();
  }
  if (config.SMTP_URL !== undefined) return { stop: async () => {} };
  const mailDir = path.join(dataDir, 'mail');
  const sink = await startSmtpSink({ dir: mailDir, port: config.SMTP_SINK_PORT, onMessage: (mail) => say(`mail received: ${mail.file}`) });
  env.SMTP_URL = sink.url;
  say(`mail: SMTP sink on ${sink.url}, each message kept in ${mailDir} (set SMTP_URL for a real server)`);
  return { stop: sink.stop };
}
