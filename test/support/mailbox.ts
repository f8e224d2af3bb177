import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startSmtpSink, type ReceivedMail } from '../../infra/smtp-sink.ts';

/**
 * A real SMTP server for a test file (the development sink, infra/smtp-sink.ts, on a free port):
 * the service delivers over TCP with nodemailer, and the test reads what arrived.
 */
export interface TestMailbox {
  readonly url: string;
  readonly received: readonly ReceivedMail[];
  /** The next message to `to` not yet taken, waiting up to `timeoutMs` for it. */
  next(to: string, timeoutMs?: number): Promise<ReceivedMail>;
  stop(): Promise<void>;
}

export async function startTestMailbox(): Promise<TestMailbox> {
  const dir = mkdtempSync(path.join(tmpdir(), 'test-mailbox-'));
  const received: ReceivedMail[] = [];
  const taken = new Set<ReceivedMail>();
  const waiters = new Set<() => void>();
  const sink = await startSmtpSink({
    dir,
    port: 0,
    onMessage: (mail) => {
      received.push(mail);
      for (const wake of waiters) wake();
    },
  });
  return {
    url: sink.url,
    received,
    async next(to, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const mail = received.find((candidate) => !taken.has(candidate) && candidate.to.includes(to));
        if (mail !== undefined) {
          taken.add(mail);
          return mail;
        }
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no mail to ${to} within ${timeoutMs} ms (${received.length} received in all)`);
        await new Promise<void>((resolve) => {
          const wake = (): void => {
            waiters.delete(wake);
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(wake, Math.min(left, 500));
          waiters.add(wake);
        });
      }
    },
    async stop() {
      await sink.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
