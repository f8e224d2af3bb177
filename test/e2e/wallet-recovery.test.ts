/**
 * The wallet program's backup and recovery against the real server (listening on a port, with its
 * worker, the run's Temporal dev server and a database of its own), as a user runs it: A holds a
 * PLC and has a balance; A backs up; A's keys are deleted; A recovers them with the passphrase
 * alone; A spends the PLC it held (B registers the hop A signed, so the server verified the
 * recovered key's signature) and issues a new one from its balance.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { field, ok, refused, wallet } from '../bin/wallet-cli.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

let t: TestApp;
let serverUrl = '';
let root = '';
const dirs = { a: '', b: '', x: '' };
const keys = { a: '', b: '', x: '' };
let heldToken = '';
let passphraseFile = '';
let deviceA = '';

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_PLC_PER_MINUTE: '10000', RATE_LIMIT_TRANSFER_PER_MINUTE: '10000', RATE_LIMIT_SECURITY_PER_MINUTE: '10000' });
  await t.startWorker();
  serverUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
  root = mkdtempSync(join(tmpdir(), 'wallet-recovery-'));
  for (const name of ['a', 'b', 'x'] as const) dirs[name] = join(root, name);
});

afterAll(async () => {
  await t?.close();
  if (root !== '') rmSync(root, { recursive: true, force: true });
});

async function deposit(owner: string, amount: string): Promise<void> {
  const response = await fetch(new URL('/api/v1/balance/deposit', serverUrl), {
    method: 'POST',
    headers: { ...(await t.adminHeaders()), 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    body: JSON.stringify({ owner_id: owner, amount, currency: 'BRL' }),
  });
  expect(response.status, await response.clone().text()).toBe(200);
}

async function plcStatus(tokenId: string): Promise<Record<string, unknown>> {
  const response = await fetch(new URL(`/api/v1/plc/${tokenId}/status`, serverUrl));
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

describe('wallet backup and recovery against the real server', () => {
  it('A holds a PLC from X and a balance, and backs up with a generated passphrase', async () => {
    for (const name of ['a', 'b', 'x'] as const) {
      const output = await ok(dirs[name], 'init');
      keys[name] = field(output, 'public_key');
      if (name === 'a') deviceA = field(output, 'device_id');
    }
    await deposit(keys.x, '10.00');
    await deposit(keys.a, '10.00');
    heldToken = field(await ok(dirs.x, 'create', '--amount', '3.00', '--currency', 'BRL', '--ttl-hours', '2', '--server', serverUrl), 'token_id');
    const file = join(root, 'x-to-a.txt');
    await ok(dirs.x, 'send', '--token', heldToken, '--to', keys.a, '--out', file);
    await ok(dirs.a, 'receive', '--in', file);

    const backedUp = await ok(dirs.a, 'backup', '--server', serverUrl);
    const passphrase = field(backedUp, 'passphrase');
    expect(passphrase).toMatch(/^[0-9a-z]{5}(-[0-9a-z]{5}){5}$/);
    expect(field(backedUp, 'device_id')).toBe(deviceA);
    const recoveryKey = field(backedUp, 'recovery_key');
    // The backup is filed under the recovery key, which says nothing about A's own key.
    expect(recoveryKey).not.toBe(keys.a);
    const check = (await (await fetch(new URL(`/api/v1/security/key/check/${recoveryKey}`, serverUrl))).json()) as { has_backup: boolean };
    expect(check.has_backup).toBe(true);
    passphraseFile = join(root, 'passphrase.txt');
    writeFileSync(passphraseFile, `${passphrase}\n`, { mode: 0o600 });

    // Backing up again with the same passphrase replaces the backup (a signed overwrite).
    expect(await ok(dirs.a, 'backup', '--server', serverUrl, '--passphrase-file', passphraseFile)).toContain("replaced this device's earlier backup");
  });

  it("A's keys are deleted; recover brings them back from the passphrase alone, and refuses a wrong one", async () => {
    rmSync(join(dirs.a, 'secret.key'));
    rmSync(join(dirs.a, 'wallet.json'));
    await refused(dirs.a, 'not_initialised', 'show-key');

    const wrong = join(root, 'wrong.txt');
    writeFileSync(wrong, 'not the passphrase at all, sorry\n');
    await refused(dirs.a, 'no_backup', 'recover', '--server', serverUrl, '--passphrase-file', wrong);

    const recovered = await ok(dirs.a, 'recover', '--server', serverUrl, '--passphrase-file', passphraseFile);
    expect(field(recovered, 'public_key')).toBe(keys.a);
    expect(field(recovered, 'device_id')).toBe(deviceA);
    expect(statSync(join(dirs.a, 'secret.key')).mode & 0o077).toBe(0);
    const shown = await ok(dirs.a, 'show-key');
    expect(field(shown, 'public_key')).toBe(keys.a);
    // A directory that holds a key already is never overwritten.
    await refused(dirs.a, 'already_initialised', 'recover', '--server', serverUrl, '--passphrase-file', passphraseFile);
  });

  it('A spends the PLC it held with the recovered key, and issues a new one from its balance', async () => {
    const file = join(root, 'a-to-b.txt');
    await ok(dirs.a, 'send', '--token', heldToken, '--to', keys.b, '--out', file);
    await ok(dirs.b, 'receive', '--in', file);
    const registered = await ok(dirs.b, 'register', '--token', heldToken, '--server', serverUrl);
    expect(field(registered, 'chain_length')).toBe('2');
    expect(field(registered, 'bearer')).toBe(keys.b);
    expect(await plcStatus(heldToken)).toMatchObject({ status: 'TRANSFERRED', bearer_pubkey: keys.b, chain_length: 2 });

    const created = await ok(dirs.a, 'create', '--amount', '4.00', '--currency', 'BRL', '--ttl-hours', '1', '--server', serverUrl);
    const tokenId = field(created, 'token_id');
    expect(await plcStatus(tokenId)).toMatchObject({ status: 'ISSUED', issuer_pubkey: keys.a, amount: '4.00' });
    const balance = (await (await fetch(new URL(`/api/v1/balance/${keys.a}?currency=BRL`, serverUrl))).json()) as Record<string, string>;
    expect(balance).toMatchObject({ available: '6.00', promised: '4.00' });
  });

  it('a wallet directory lost whole is rebuilt from the passphrase', async () => {
    rmSync(dirs.a, { recursive: true, force: true });
    const recovered = await ok(dirs.a, 'recover', '--server', serverUrl, '--passphrase-file', passphraseFile);
    expect(field(recovered, 'public_key')).toBe(keys.a);
    expect(existsSync(join(dirs.a, 'plcs'))).toBe(true);
    expect(JSON.parse(readFileSync(join(dirs.a, 'wallet.json'), 'utf8'))).toMatchObject({ public_key: keys.a, device_id: deviceA });
  });

  it('refuses a passphrase file with a short passphrase before asking the server anything', async () => {
    const short = join(root, 'short.txt');
    writeFileSync(short, 'tooshort\n');
    await refused(dirs.b, 'invalid_input', 'backup', '--server', serverUrl, '--passphrase-file', short);
    const usage = await wallet(dirs.b, 'recover', '--server', serverUrl);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('error [usage]: --passphrase-file is required');
  });
});
