import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSmtpSink, type ReceivedMail, type SmtpSink } from '../../infra/smtp-sink.ts';
import { freePort } from '../../infra/temporal-dev-server.ts';
import { pinResetCodeIn } from '../../src/security/pin-reset-email.ts';
import { businessStatusKey, ownerIdKey } from '../../workflows/search-attributes.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { eventually } from '../support/temporal-cli.ts';
import { replayAndRecord } from '../support/histories.ts';

/**
 * The PIN reset e-mail workflow (`pin-reset-email-<request_id>`) against the dev server: SENT and
 * NO_MATCH, and an SMTP server that is down when the first attempt runs: the activity is retried
 * with backoff and the mail goes out once the server is up, with a code that works. Histories are
 * replayed here and recorded for test/workflows/replay.test.ts with RECORD_HISTORIES=1.
 */

let t: TestApp;
let smtpPort = 0;
let sink: SmtpSink | null = null;
const received: ReceivedMail[] = [];
const sinkDir = mkdtempSync(path.join(tmpdir(), 'reset-workflow-mail-'));

beforeAll(async () => {
  // The SMTP server's port is fixed before anything listens on it: the first test starts it late.
  smtpPort = await freePort();
  t = await createTestApp({ SMTP_URL: `smtp://127.0.0.1:${smtpPort}`, RATE_LIMIT_SECURITY_PER_MINUTE: '10000' });
  await t.startWorker();
});
afterAll(async () => {
  await t?.close();
  await sink?.stop();
  rmSync(sinkDir, { recursive: true, force: true });
});

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

function post(url: string, payload: Record<string, unknown>) {
  return t.app.inject({ method: 'POST', url: `/api/v1/security${url}`, payload });
}

/** The id of the owner's one reset workflow. */
async function workflowOf(ownerId: string): Promise<string> {
  return eventually(async () => {
    for await (const execution of t.temporal.workflow.list({ query: `OwnerId = "${ownerId}"` })) return execution.workflowId;
    return undefined;
  });
}

describe('pin reset e-mail workflow', () => {
  it('retries while the SMTP server is down and sends once it is up: SENT, and the code resets the PIN', async () => {
    const owner = `wf-retry-${hex(4)}`;
    const email = `retry-${hex(3)}@example.com`;
    expect((await post('/pin/register', { owner_id: owner, pin_hash: hex(32), salt: hex(16), email })).statusCode).toBe(200);
    expect((await post('/pin/request-reset', { owner_id: owner, email })).statusCode).toBe(202);
    const workflowId = await workflowOf(owner);
    expect(workflowId).toMatch(/^pin-reset-email-[0-9a-f-]{36}$/);
    // Nothing listens yet: the first attempt fails, and the activity waits for its retry.
    await eventually(async () => {
      const description = await t.temporal.workflow.getHandle(workflowId).describe();
      const pending = description.raw.pendingActivities?.[0];
      return pending !== undefined && (pending.attempt ?? 0) >= 2 ? true : undefined;
    }, 15_000);
    sink = await startSmtpSink({ dir: sinkDir, port: smtpPort, onMessage: (mail) => received.push(mail) });

    const result = await t.temporal.workflow.getHandle(workflowId).result();
    expect(result).toEqual({ status: 'SENT' });
    const mail = received.find((candidate) => candidate.to.includes(email));
    expect(mail).toBeDefined();
    const code = pinResetCodeIn(mail!.raw);
    expect(code).not.toBeNull();
    expect((await post('/pin/reset', { owner_id: owner, token: code, pin_hash: hex(32), salt: hex(16) })).statusCode).toBe(200);

    const description = await t.temporal.workflow.getHandle(workflowId).describe();
    expect(description.typedSearchAttributes.get(businessStatusKey)).toBe('SENT');
    expect(description.typedSearchAttributes.get(ownerIdKey)).toBe(owner);
    await replayAndRecord(t.temporal, workflowId, 'pin-reset-email-retried-sent');
  });

  it('ends NO_MATCH, sending nothing, when the address is not the owner\'s', async () => {
    const owner = `wf-miss-${hex(4)}`;
    expect((await post('/pin/register', { owner_id: owner, pin_hash: hex(32), salt: hex(16), email: 'right@example.com' })).statusCode).toBe(200);
    const before = received.length;
    expect((await post('/pin/request-reset', { owner_id: owner, email: 'wrong@example.com' })).statusCode).toBe(202);
    const workflowId = await workflowOf(owner);
    expect(await t.temporal.workflow.getHandle(workflowId).result()).toEqual({ status: 'NO_MATCH' });
    expect(received.length).toBe(before);
    const stored = await t.db.pool.query('SELECT 1 FROM pin_reset_tokens WHERE owner_id = $1', [owner]);
    expect(stored.rowCount).toBe(0);
    await replayAndRecord(t.temporal, workflowId, 'pin-reset-email-no-match');
  });
});
