import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.ts';
import { createSecurityService } from '../../services/security.ts';
import { createPool, type Pool } from '../../db/pool.ts';
import { signKeyOperation, type KeyOperationKind } from '../../src/protocol/auth-messages.ts';
import { bytesToHex } from '../../src/protocol/bytes.ts';
import { generateKeyPair, type KeyPair } from '../../src/protocol/keys.ts';
import { backupDevicesPerKeyMax } from '../../src/security/key-backup.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

/**
 * Key backup and recovery against a real PostgreSQL: the first backup unsigned, every other write
 * signed by the key, recovery only for a fresh signature, each signed message accepted once (also
 * when two replicas receive it at the same moment), and every bad input refused with nothing
 * changed and no seed in the answer.
 */

const toleranceMs = 300_000;
let t: TestApp;
let replica: FastifyInstance;
let replicaPool: Pool;

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_SECURITY_PER_MINUTE: '100000', CLOCK_TOLERANCE_MS: String(toleranceMs) });
  replicaPool = createPool({ connectionString: t.db.url, max: 10, applicationName: 'test-replica' });
  replica = await buildApp({
    deps: { ...t.app.deps, pool: replicaPool, security: createSecurityService({ pool: replicaPool, temporal: t.temporal, config: t.config }) },
    logger: false,
  });
});
afterAll(async () => {
  await replica?.close();
  await replicaPool?.end();
  await t?.close();
});

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');
let deviceCounter = 0;
const newDevice = (): string => `device-${(deviceCounter += 1)}.${hex(3)}`;

interface Signed {
  device_signature: string;
  operation_timestamp: number;
}

function sign(kind: KeyOperationKind, key: KeyPair, deviceId: string, timestampMs: number = Date.now()): Signed {
  const signed = signKeyOperation(kind, { deviceId, operationTimestampMs: timestampMs }, key.secretKey);
  return { device_signature: bytesToHex(signed.signature), operation_timestamp: timestampMs };
}

function post(url: string, payload: Record<string, unknown>, app: FastifyInstance = t.app) {
  return app.inject({ method: 'POST', url: `/api/v1/security/key${url}`, payload });
}

function backup(key: KeyPair, deviceId: string, seed: string, signed?: Signed, app?: FastifyInstance) {
  return post('/backup', { public_key: bytesToHex(key.publicKey), device_id: deviceId, encrypted_seed: seed, ...signed }, app);
}

function recover(key: KeyPair, deviceId: string, signed: Signed, app?: FastifyInstance) {
  return post('/recover', { public_key: bytesToHex(key.publicKey), device_id: deviceId, ...signed }, app);
}

async function check(key: KeyPair) {
  const response = await t.app.inject({ method: 'GET', url: `/api/v1/security/key/check/${bytesToHex(key.publicKey)}` });
  expect(response.statusCode).toBe(200);
  return response.json();
}

async function storedSeed(key: KeyPair, deviceId: string): Promise<string | undefined> {
  const result = await t.db.pool.query('SELECT encrypted_seed FROM key_backups WHERE public_key = $1 AND device_id = $2', [bytesToHex(key.publicKey), deviceId]);
  return (result.rows[0] as { encrypted_seed: Buffer } | undefined)?.encrypted_seed.toString('hex');
}

describe('POST /api/v1/security/key/backup', () => {
  it('accepts the first backup of a key unsigned, then only signed writes; a signature is accepted once', async () => {
    const key = generateKeyPair();
    const device = newDevice();
    const [first, second, third] = [hex(64), hex(64), hex(64)];
    expect(await check(key)).toEqual({ public_key: bytesToHex(key.publicKey), has_backup: false, devices: [] });

    const created = await backup(key, device, first);
    expect(created.statusCode, created.body).toBe(200);
    expect(created.json()).toMatchObject({ public_key: bytesToHex(key.publicKey), device_id: device, created: true });
    expect(created.body).not.toContain(first);
    const checked = await check(key);
    expect(checked).toMatchObject({ has_backup: true, devices: [{ device_id: device }] });

    for (const deviceId of [device, newDevice()]) {
      const unsigned = await backup(key, deviceId, second);
      expect(unsigned.statusCode).toBe(409);
      expect(unsigned.json()).toMatchObject({ code: 'KEY_BACKUP_SIGNATURE_REQUIRED' });
    }
    expect(await storedSeed(key, device)).toBe(first);

    const signed = sign('backup', key, device);
    const overwritten = await backup(key, device, second, signed);
    expect(overwritten.statusCode, overwritten.body).toBe(200);
    expect(overwritten.json()).toMatchObject({ created: false });
    expect(await storedSeed(key, device)).toBe(second);

    const replayed = await backup(key, device, third, signed);
    expect(replayed.statusCode).toBe(409);
    expect(replayed.json()).toMatchObject({ code: 'AUTHORIZATION_REPLAYED' });
    expect(await storedSeed(key, device)).toBe(second);

    // A second device of the same key, signed: a backup of its own.
    const other = newDevice();
    expect((await backup(key, other, third, sign('backup', key, other))).json()).toMatchObject({ created: true });
    expect((await check(key)).devices.map((entry: { device_id: string }) => entry.device_id)).toEqual([other, device]);
  });

  it('of two unsigned first backups of one key sent together through two replicas, exactly one is accepted', async () => {
    const key = generateKeyPair();
    const answers = await Promise.all([backup(key, newDevice(), hex(64)), backup(key, newDevice(), hex(64), undefined, replica)]);
    expect(answers.map((answer) => answer.statusCode).sort()).toEqual([200, 409]);
    expect((await check(key)).devices).toHaveLength(1);
  });

  it(`keeps backups of at most ${backupDevicesPerKeyMax} devices per key`, async () => {
    const key = generateKeyPair();
    expect((await backup(key, 'd-0', hex(32))).statusCode).toBe(200);
    for (let index = 1; index < backupDevicesPerKeyMax; index += 1) {
      expect((await backup(key, `d-${index}`, hex(32), sign('backup', key, `d-${index}`))).statusCode).toBe(200);
    }
    const over = await backup(key, 'd-extra', hex(32), sign('backup', key, 'd-extra'));
    expect(over.statusCode).toBe(409);
    expect(over.json()).toMatchObject({ code: 'KEY_BACKUP_DEVICES_EXCEEDED' });
    expect((await check(key)).devices).toHaveLength(backupDevicesPerKeyMax);
  });

  it.each([
    ['a seed over 1024 bytes', { encrypted_seed: 'ab'.repeat(1025) }, 'encrypted_seed'],
    ['a seed under 16 bytes', { encrypted_seed: 'ab'.repeat(15) }, 'encrypted_seed'],
    ['a seed that is not hex', { encrypted_seed: 'zz'.repeat(32) }, 'encrypted_seed'],
    ['a seed of half a byte', { encrypted_seed: 'a'.repeat(33) }, 'encrypted_seed'],
    ['a public key of small order', { public_key: `01${'00'.repeat(31)}` }, 'public_key'],
    ['a non-canonical public key', { public_key: `ed${'ff'.repeat(30)}7f` }, 'public_key'],
    // Canonical and not of small order, but with a torsion component (vector torsion_key_1_*): refused too.
    ['a public key with a torsion component', { public_key: 'dfaee177bafa8cb0327629b802d680841aa21c6bbb2756a35b4c8da290fd11b8' }, 'public_key'],
    ['a public key in uppercase', { public_key: 'AB'.repeat(32) }, 'public_key'],
    ['a device id with a colon', { device_id: 'phone:1' }, 'device_id'],
    ['a device id of 129 characters', { device_id: 'd'.repeat(129) }, 'device_id'],
    ['a signature without its timestamp', { device_signature: 'ab'.repeat(64) }, 'device_signature'],
    ['a timestamp as a string', { device_signature: 'ab'.repeat(64), operation_timestamp: '1795341600000' }, 'operation_timestamp'],
    ['an unknown field', { seed: 'x' }, ''],
  ])('answers 422 for %s and stores nothing', async (_name, change, field) => {
    const key = generateKeyPair();
    const response = await post('/backup', { public_key: bytesToHex(key.publicKey), device_id: 'phone', encrypted_seed: hex(64), ...change });
    expect(response.statusCode, response.body).toBe(422);
    if (field !== '') expect((response.json().detail as { loc: string[] }[]).some((item) => item.loc.includes(field))).toBe(true);
    expect((await check(key)).has_backup).toBe(false);
  });

  it('refuses signatures that are stale, from the future, by another key, non-canonical, or for another operation, and changes nothing', async () => {
    const key = generateKeyPair();
    const device = newDevice();
    const seed = hex(64);
    expect((await backup(key, device, seed)).statusCode).toBe(200);
    const now = Date.now();
    const cases: [string, Signed, string][] = [
      ['stale', sign('backup', key, device, now - toleranceMs - 60_000), 'AUTHORIZATION_STALE.too_old'],
      ['future', sign('backup', key, device, now + toleranceMs + 60_000), 'AUTHORIZATION_STALE.in_future'],
      ['another key', sign('backup', generateKeyPair(), device, now), 'SIGNATURE_INVALID'],
      ['a recover signature', sign('recover', key, device, now), 'SIGNATURE_INVALID'],
      ['another device', sign('backup', key, `${device}-b`, now), 'SIGNATURE_INVALID'],
      ['another timestamp', { ...sign('backup', key, device, now), operation_timestamp: now + 1 }, 'SIGNATURE_INVALID'],
      ['non-canonical (S + L)', { ...sign('backup', key, device, now), device_signature: withScalarPlusL(sign('backup', key, device, now).device_signature) }, 'SIGNATURE_INVALID'],
    ];
    for (const [name, signed, type] of cases) {
      const response = await backup(key, device, hex(64), signed);
      expect(response.statusCode, name).toBe(422);
      expect(response.json().detail[0].type, name).toBe(type);
    }
    expect(await storedSeed(key, device)).toBe(seed);
  });
});

/** The same signature with S + L in place of S: equal modulo L, refused by a strict verifier. */
function withScalarPlusL(signatureHex: string): string {
  const bytes = Buffer.from(signatureHex, 'hex');
  const order = Buffer.from('edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010', 'hex');
  let carry = 0;
  for (let index = 0; index < 32; index += 1) {
    const sum = (bytes[32 + index] as number) + (order[index] as number) + carry;
    bytes[32 + index] = sum & 0xff;
    carry = sum >> 8;
  }
  return bytes.toString('hex');
}

describe('POST /api/v1/security/key/recover', () => {
  it('answers the encrypted seed for a fresh signature by the key, once; never without a valid signature', async () => {
    const key = generateKeyPair();
    const device = newDevice();
    const seed = hex(100);
    expect((await backup(key, device, seed)).statusCode).toBe(200);

    const refusals: [string, Record<string, unknown>, number][] = [
      ['no signature', { public_key: bytesToHex(key.publicKey), device_id: device, operation_timestamp: Date.now() }, 422],
      ['another key', { public_key: bytesToHex(key.publicKey), device_id: device, ...sign('recover', generateKeyPair(), device) }, 422],
      ['a backup signature', { public_key: bytesToHex(key.publicKey), device_id: device, ...sign('backup', key, device) }, 422],
      ['stale', { public_key: bytesToHex(key.publicKey), device_id: device, ...sign('recover', key, device, Date.now() - toleranceMs - 60_000) }, 422],
      ['another device', { public_key: bytesToHex(key.publicKey), device_id: `${device}-x`, ...sign('recover', key, `${device}-x`) }, 404],
    ];
    for (const [name, body, status] of refusals) {
      const response = await post('/recover', body);
      expect(response.statusCode, name).toBe(status);
      expect(response.body, name).not.toContain(seed);
    }

    const signed = sign('recover', key, device);
    const recovered = await recover(key, device, signed);
    expect(recovered.statusCode, recovered.body).toBe(200);
    expect(recovered.json()).toMatchObject({ public_key: bytesToHex(key.publicKey), device_id: device, encrypted_seed: seed });

    const replayed = await recover(key, device, signed);
    expect(replayed.statusCode).toBe(409);
    expect(replayed.json()).toMatchObject({ code: 'AUTHORIZATION_REPLAYED' });
    expect(replayed.body).not.toContain(seed);
  });

  it('one signature sent to two replicas at the same moment: exactly one answer carries the seed', async () => {
    const key = generateKeyPair();
    const device = newDevice();
    const seed = hex(48);
    expect((await backup(key, device, seed)).statusCode).toBe(200);
    for (let round = 0; round < 5; round += 1) {
      const signed = sign('recover', key, device, Date.now() + round);
      const answers = await Promise.all([recover(key, device, signed), recover(key, device, signed, replica), recover(key, device, signed), recover(key, device, signed, replica)]);
      expect(answers.map((answer) => answer.statusCode).sort()).toEqual([200, 409, 409, 409]);
      expect(answers.filter((answer) => answer.body.includes(seed))).toHaveLength(1);
    }
  });

  it('forgets accepted messages only after their timestamp can no longer be fresh', async () => {
    const key = generateKeyPair();
    const device = newDevice();
    expect((await backup(key, device, hex(32))).statusCode).toBe(200);
    const timestampMs = Date.now();
    expect((await recover(key, device, sign('recover', key, device, timestampMs))).statusCode).toBe(200);
    const stored = await t.db.pool.query('SELECT forget_after FROM key_operation_authorizations WHERE public_key = $1', [bytesToHex(key.publicKey)]);
    expect((stored.rows[0] as { forget_after: Date }).forget_after.getTime()).toBe(timestampMs + toleranceMs);
  });
});

describe('GET /api/v1/security/key/check/{public_key}', () => {
  it('answers 422 for a path that is not a key', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/security/key/check/xyz' })).statusCode).toBe(422);
  });
});
