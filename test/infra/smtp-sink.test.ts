import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../infra/config.ts';
import { prepareDevelopmentSecurity } from '../../infra/dev-security.ts';
import { createMailer } from '../../infra/mailer.ts';
import { sinkMessageBytesMax, startSmtpSink, type ReceivedMail } from '../../infra/smtp-sink.ts';

/** The development SMTP sink and the mailer, talking SMTP over TCP to each other. */

const dirs: string[] = [];
const tempDir = (): string => {
  const dir = mkdtempSync(path.join(tmpdir(), 'smtp-sink-test-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('SMTP sink', () => {
  it('keeps each delivered message as an .eml file readable by its owner only, and refuses one over its size limit', async () => {
    const dir = tempDir();
    const received: ReceivedMail[] = [];
    const sink = await startSmtpSink({ dir, port: 0, onMessage: (mail) => received.push(mail) });
    const mailer = createMailer({ smtpUrl: sink.url, from: 'Service <no-reply@example.test>' });
    try {
      await mailer.send({ to: 'alice@example.test', subject: 'Hello', text: 'line one\r\nline two\r\n' });
      expect(received).toHaveLength(1);
      const mail = received[0]!;
      expect(mail.to).toEqual(['alice@example.test']);
      expect(mail.from).toBe('no-reply@example.test');
      expect(readFileSync(mail.file, 'utf8')).toBe(mail.raw);
      expect(mail.raw).toMatch(/^Subject: Hello/m);
      expect(mail.raw).toContain('line two');
      expect(statSync(mail.file).mode & 0o077).toBe(0);

      await expect(mailer.send({ to: 'alice@example.test', subject: 'Big', text: 'x'.repeat(sinkMessageBytesMax + 1024) })).rejects.toThrow();
      expect(readdirSync(dir).filter((name) => name.endsWith('.eml'))).toHaveLength(1);
    } finally {
      mailer.close();
      await sink.stop();
    }
  });

  it('npm start: generates PIN_PEPPER once into the data folder, runs the sink, and does neither in production', async () => {
    const dataDir = tempDir();
    const config = loadConfig({ APP_ENV: 'development', SMTP_SINK_PORT: '0' });
    const lines: string[] = [];
    const first: Record<string, string> = {};
    const started = await prepareDevelopmentSecurity({ config, dataDir, env: first, say: (line) => lines.push(line) });
    try {
      expect(first.PIN_PEPPER).toMatch(/^[0-9a-f]{64}$/);
      expect(first.SMTP_URL).toMatch(/^smtp:\/\/127\.0\.0\.1:\d+$/);
      const mailer = createMailer({ smtpUrl: first.SMTP_URL as string, from: config.SMTP_FROM });
      await mailer.send({ to: 'dev@example.test', subject: 'Reset', text: 'code\r\n' });
      mailer.close();
      const printed = lines.find((line) => line.startsWith('mail received: '));
      expect(printed).toBeDefined();
      expect(readFileSync(printed!.slice('mail received: '.length), 'utf8')).toContain('Subject: Reset');
    } finally {
      await started.stop();
    }
    const second: Record<string, string> = {};
    await (await prepareDevelopmentSecurity({ config: loadConfig({ APP_ENV: 'development', SMTP_URL: 'smtp://mail.example.test:25' }), dataDir, env: second, say: () => {} })).stop();
    expect(second).toEqual({ PIN_PEPPER: first.PIN_PEPPER });

    const production: Record<string, string> = {};
    const productionConfig = { ...config, APP_ENV: 'production' as const };
    await (await prepareDevelopmentSecurity({ config: productionConfig, dataDir: tempDir(), env: production, say: () => {} })).stop();
    expect(production).toEqual({});
  });
});
