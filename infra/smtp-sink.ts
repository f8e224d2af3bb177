import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';

/**
 * A real SMTP server on a local port that keeps every message it receives as an .eml file: the
 * mail of `npm start` when SMTP_URL is unset (so a PIN reset works with nothing configured), and
 * the receiving end of the tests. It accepts any sender and recipient without authentication,
 * listens on 127.0.0.1 only, refuses messages over 256 KiB and keeps the newest 500 files.
 */

export interface ReceivedMail {
  /** The .eml file the message was written to. */
  readonly file: string;
  /** The whole message as received (headers and body). */
  readonly raw: string;
  readonly from: string | null;
  readonly to: readonly string[];
}

export interface SmtpSink {
  /** smtp://127.0.0.1:<port>, for SMTP_URL. */
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

export interface SmtpSinkOptions {
  readonly dir: string;
  /** 0 picks a free port. */
  readonly port: number;
  readonly onMessage?: (mail: ReceivedMail) => void;
}

export const sinkMessageBytesMax = 256 * 1024;
export const sinkFilesMax = 500;

async function pruneOldest(dir: string): Promise<void> {
  const files = (await readdir(dir)).filter((name) => name.endsWith('.eml')).sort();
  for (const name of files.slice(0, Math.max(0, files.length - sinkFilesMax))) {
    await rm(path.join(dir, name), { force: true });
  }
}

export async function startSmtpSink(options: SmtpSinkOptions): Promise<SmtpSink> {
  await mkdir(options.dir, { recursive: true, mode: 0o700 });
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    size: sinkMessageBytesMax,
    logger: false,
    banner: 'plc-settlement development mail sink',
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      let bytes = 0;
      stream.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes <= sinkMessageBytesMax) chunks.push(chunk);
      });
      stream.on('error', (error) => callback(error));
      stream.on('end', () => {
        if (stream.sizeExceeded === true || bytes > sinkMessageBytesMax) {
          callback(Object.assign(new Error('message too large'), { responseCode: 552 }));
          return;
        }
        const raw = Buffer.concat(chunks).toString('utf8');
        // Sortable by arrival: an ISO time (':' is not allowed in every file system) and a random suffix.
        const file = path.join(options.dir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomBytes(4).toString('hex')}.eml`);
        writeFile(file, raw, { mode: 0o600 })
          .then(() => pruneOldest(options.dir))
          .then(
            () => {
              const from = session.envelope.mailFrom === false ? null : session.envelope.mailFrom.address;
              options.onMessage?.({ file, raw, from, to: session.envelope.rcptTo.map((recipient) => recipient.address) });
              callback();
            },
            (error: unknown) => callback(error instanceof Error ? error : new Error(String(error))),
          );
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Errors after start (a client dropping mid-message) concern one connection, not the sink.
  server.on('error', () => {});
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    port,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
