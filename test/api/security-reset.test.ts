import { randomBytes } from 'node:crypto';
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.ts';
import { loggerOptions } from '../../infra/logger.ts';
import { signKeyOperation } from '../../src/protocol/auth-messages.ts';
import { bytesToHex } from '../../src/protocol/bytes.ts';
import { generateKeyPair } from '../../src/protocol/keys.ts';
import { pinResetCodeIn } from '../../src/security/pin-reset-email.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { startTestMailbox, type TestMailbox } from '../support/mailbox.ts';

/**
 * The PIN reset by e-mail end to end: the API starts the reset workflow, the worker's activity
 * sends the code through a real SMTP server listening in this test (nodemailer over TCP), the test
 * reads the code from the delivered message and uses it once. Every log line of the API (pino at
 * trace) and of the worker (the Temporal runtime's logger at trace) during a full PIN, reset and
 * backup journey is captured, and none holds a secret.
 */

const apiLines: string[] = [];
const workerLines: string[] = [];
// Before any worker of this process: the runtime's logger is installed once per process.
Runtime.install({
  logger: new DefaultLogger('TRACE', (entry: LogEntry) => {
    workerLines.push(JSON.stringify(entry, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value)));
  }),
});

let t: TestApp;
let mailbox: TestMailbox;
let app: FastifyInstance;

beforeAll(async () => {
  mailbox = await startTestMailbox();
  t = await createTestApp({ SMTP_URL: mailbox.url, SMTP_FROM: 'Settlement <no-reply@settlement.test>', RATE_LIMIT_SECURITY_PER_MINUTE: '100000' });
  await t.startWorker();
  // The same dependencies, logging every line at trace into memory, as a production process would log.
  const logger = pino(loggerOptions('trace', 'api'), { write: (line: string) => void apiLines.push(line) });
  app = await buildApp({ deps: t.app.deps, logger });
});
afterAll(async () => {
  await app?.close();
  await t?.close();
  await mailbox?.stop();
});

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

function post(url: string, payload: Record<string, unknown>) {
  return app.inject({ method: 'POST', url: `/api/v1/security${url}`, payload, headers: { 'x-device-id': 'phone-1' } });
}

async function codeFrom(to: string): Promise<string> {
  const mail = await mailbox.next(to);
  expect(mail.raw).toMatch(/^Subject: Your PIN reset code/m);
  const code = pinResetCodeIn(mail.raw);
  if (code === null) throw new Error(`no reset code in the message:\n${mail.raw}`);
  return code;
}

async function requestReset(ownerId: string, email: string) {
  const response = await post('/pin/request-reset', { owner_id: ownerId, email });
  expect(response.statusCode, response.body).toBe(202);
  return response.json();
}

/** Waits for the owner's `count` reset workflows to be listed and to finish; answers their results. */
async function resetWorkflows(ownerId: string, count: number): Promise<string[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const ids: string[] = [];
    for await (const execution of t.temporal.workflow.list({ query: `OwnerId = "${ownerId}"` })) ids.push(execution.workflowId);
    if (ids.length >= count || Date.now() > deadline) {
      const results = await Promise.all(ids.map(async (id) => ((await t.temporal.workflow.getHandle(id).result()) as { status: string }).status));
      return results.sort();
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('PIN reset by e-mail, and a whole journey whose logs hold no secret', () => {
  it('register, lock, reset through a real SMTP server, use the code once; back up and recover a key; no secret in any log line', async () => {
    const owner = `journey-${hex(4)}`;
    const email = `owner-${hex(3)}@example.com`;
    const [pin, wrong, newPin] = [hex(32), hex(32), hex(32)];
    const secrets: string[] = [pin, wrong, newPin, t.config.PIN_PEPPER as string];

    expect((await post('/pin/register', { owner_id: owner, pin_hash: pin, salt: hex(16), email })).statusCode).toBe(200);
    expect((await post('/pin/verify', { owner_id: owner, pin_hash: pin })).json()).toMatchObject({ valid: true });
    for (let attempt = 0; attempt < 5; attempt += 1) await post('/pin/verify', { owner_id: owner, pin_hash: wrong });
    expect((await post('/pin/verify', { owner_id: owner, pin_hash: pin })).statusCode).toBe(423);

    // The same answer for a wrong address and for the right one (in another case): only the right one gets mail.
    const miss = await requestReset(owner, `someone-else@example.com`);
    const hit = await requestReset(owner, email.toUpperCase());
    expect(miss).toEqual(hit);
    expect(hit).toMatchObject({ accepted: true, expires_in_s: 1800 });
    const code = await codeFrom(email);
    secrets.push(code);
    expect(await resetWorkflows(owner, 2)).toEqual(['NO_MATCH', 'SENT']);
    expect(mailbox.received.filter((mail) => mail.to.includes('someone-else@example.com'))).toHaveLength(0);

    const reset = await post('/pin/reset', { owner_id: owner, token: code, pin_hash: newPin, salt: hex(16) });
    expect(reset.statusCode, reset.body).toBe(200);
    expect(reset.json()).toMatchObject({ owner_id: owner, registered: true, created: false, recovery_email_set: true });
    // The lock ended with the reset; the new PIN verifies, the old one does not.
    expect((await post('/pin/verify', { owner_id: owner, pin_hash: newPin })).json()).toMatchObject({ valid: true, attempts_remaining: 5 });
    expect((await post('/pin/verify', { owner_id: owner, pin_hash: pin })).json()).toMatchObject({ valid: false });

    const again = await post('/pin/reset', { owner_id: owner, token: code, pin_hash: hex(32), salt: hex(16) });
    expect(again.statusCode).toBe(422);
    expect(again.json().detail[0]).toMatchObject({ loc: ['body', 'token'], type: 'PIN_RESET_TOKEN_INVALID.used' });

    // A key backup and its recovery in the same journey.
    const key = generateKeyPair();
    const publicKey = bytesToHex(key.publicKey);
    const seed = hex(80);
    secrets.push(seed, bytesToHex(key.secretKey));
    expect((await post('/key/backup', { public_key: publicKey, device_id: 'phone-1', encrypted_seed: seed })).statusCode).toBe(200);
    const signed = signKeyOperation('recover', { deviceId: 'phone-1', operationTimestampMs: Date.now() }, key.secretKey);
    const recovered = await post('/key/recover', {
      public_key: publicKey,
      device_id: 'phone-1',
      device_signature: bytesToHex(signed.signature),
      operation_timestamp: signed.operationTimestampMs,
    });
    expect(recovered.statusCode, recovered.body).toBe(200);
    expect(recovered.json()).toMatchObject({ encrypted_seed: seed });
    const unsigned = await post('/key/backup', { public_key: publicKey, device_id: 'phone-1', encrypted_seed: hex(80) });
    expect(unsigned.statusCode).toBe(409);
    expect(unsigned.body).not.toContain(seed);

    // Every line, API and worker: there are lines (the capture works), and not one secret among them.
    expect(apiLines.length).toBeGreaterThan(20);
    expect(workerLines.some((line) => line.includes('pinResetEmailWorkflow') || line.includes('sendPinResetEmail'))).toBe(true);
    // The worker logs payloads in base64: decoded, so that a secret inside one would be found too.
    const decodedPayloads = workerLines.flatMap((line) => [...line.matchAll(/"data":"([A-Za-z0-9+/=]+)"/g)].map((match) => Buffer.from(match[1]!, 'base64').toString('utf8')));
    expect(decodedPayloads.some((payload) => payload.includes(owner))).toBe(true);
    const everything = [...apiLines, ...workerLines, ...decodedPayloads].join('\n');
    expect(everything).toContain('/api/v1/security/pin/reset');
    for (const secret of secrets) expect(everything.includes(secret), `a log line holds the secret ${secret.slice(0, 6)}...`).toBe(false);
    // Nor the e-mail address itself (personal data): only its hash crosses into the workflow.
    expect(everything.includes(email)).toBe(false);
  });

  it('a newer request voids the older code; an expired, a forged and a malformed code are refused and change nothing', async () => {
    const owner = `voided-${hex(4)}`;
    const email = `voided-${hex(3)}@example.com`;
    const pin = hex(32);
    expect((await post('/pin/register', { owner_id: owner, pin_hash: pin, salt: hex(16), email })).statusCode).toBe(200);

    await requestReset(owner, email);
    const older = await codeFrom(email);
    await resetWorkflows(owner, 1);
    await requestReset(owner, email);
    const newer = await codeFrom(email);
    expect(newer).not.toBe(older);

    const refusedOlder = await post('/pin/reset', { owner_id: owner, token: older, pin_hash: hex(32), salt: hex(16) });
    expect(refusedOlder.statusCode).toBe(422);
    expect(refusedOlder.json().detail[0].type).toBe('PIN_RESET_TOKEN_INVALID.unknown');
    const forged = await post('/pin/reset', { owner_id: owner, token: randomBytes(32).toString('base64url'), pin_hash: hex(32), salt: hex(16) });
    expect(forged.json().detail[0].type).toBe('PIN_RESET_TOKEN_INVALID.unknown');
    const malformed = await post('/pin/reset', { owner_id: owner, token: 'not a code', pin_hash: hex(32), salt: hex(16) });
    expect(malformed.statusCode).toBe(422);
    expect(malformed.json().detail[0].type).toBe('PIN_RESET_TOKEN_INVALID.malformed');
    const otherOwner = await post('/pin/reset', { owner_id: `${owner}-x`, token: newer, pin_hash: hex(32), salt: hex(16) });
    expect(otherOwner.json().detail[0].type).toBe('PIN_RESET_TOKEN_INVALID.unknown');

    // Expired: the row's clock moved back past its life (the refusal, not the wait, is under test).
    await t.db.pool.query(`UPDATE pin_reset_tokens SET issued_at = now() - interval '2 hours', expires_at = now() - interval '1 hour' WHERE owner_id = $1`, [owner]);
    const expired = await post('/pin/reset', { owner_id: owner, token: newer, pin_hash: hex(32), salt: hex(16) });
    expect(expired.statusCode).toBe(422);
    expect(expired.json().detail[0].type).toBe('PIN_RESET_TOKEN_INVALID.expired');

    // Nothing changed: the old PIN still verifies.
    expect((await post('/pin/verify', { owner_id: owner, pin_hash: pin })).json()).toMatchObject({ valid: true });
  });

  it('a change of the recovery e-mail or of the PIN voids a code already sent', async () => {
    const owner = `changed-${hex(4)}`;
    const email = `changed-${hex(3)}@example.com`;
    const pin = hex(32);
    expect((await post('/pin/register', { owner_id: owner, pin_hash: pin, salt: hex(16), email })).statusCode).toBe(200);
    await requestReset(owner, email);
    const beforeEmailChange = await codeFrom(email);
    expect((await post('/email/update', { owner_id: owner, current_pin_hash: pin, email })).statusCode).toBe(200);
    const refused = await post('/pin/reset', { owner_id: owner, token: beforeEmailChange, pin_hash: hex(32), salt: hex(16) });
    expect(refused.json().detail[0].type).toBe('PIN_RESET_TOKEN_INVALID.unknown');

    await requestReset(owner, email);
    const beforePinChange = await codeFrom(email);
    const newPin = hex(32);
    expect((await post('/pin/register', { owner_id: owner, pin_hash: newPin, salt: hex(16), current_pin_hash: pin })).statusCode).toBe(200);
    const refusedAgain = await post('/pin/reset', { owner_id: owner, token: beforePinChange, pin_hash: hex(32), salt: hex(16) });
    expect(refusedAgain.json().detail[0].type).toBe('PIN_RESET_TOKEN_INVALID.unknown');
    expect((await post('/pin/verify', { owner_id: owner, pin_hash: newPin })).json()).toMatchObject({ valid: true });
  });

  it('two concurrent resets with one code: exactly one succeeds', async () => {
    const owner = `twice-${hex(4)}`;
    const email = `twice-${hex(3)}@example.com`;
    expect((await post('/pin/register', { owner_id: owner, pin_hash: hex(32), salt: hex(16), email })).statusCode).toBe(200);
    await requestReset(owner, email);
    const code = await codeFrom(email);
    const [a, b] = [hex(32), hex(32)];
    const answers = await Promise.all([a, b].map((pinHash) => post('/pin/reset', { owner_id: owner, token: code, pin_hash: pinHash, salt: hex(16) })));
    expect(answers.map((answer) => answer.statusCode).sort()).toEqual([200, 422]);
    const winner = answers[0]!.statusCode === 200 ? a : b;
    expect((await post('/pin/verify', { owner_id: owner, pin_hash: winner })).json()).toMatchObject({ valid: true });
  });

  it('limits reset requests per owner, whatever the address', async () => {
    const owner = `flood-${hex(4)}`;
    const answers = [];
    for (let request = 0; request < 6; request += 1) {
      answers.push((await post('/pin/request-reset', { owner_id: owner, email: `x${request}@example.com` })).statusCode);
    }
    expect(answers).toEqual([202, 202, 202, 202, 202, 429]);
    expect((await post('/pin/request-reset', { owner_id: owner, email: 'not an address' })).statusCode).toBe(422);
  });
});
