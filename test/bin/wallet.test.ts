/**
 * The wallet program end to end, as a user runs it: a child process per command (Node running
 * bin/wallet.ts directly), three wallet directories passing one PLC A -> B -> C -> A through
 * files, refusals of tampered input, replays and a double spend, and the online steps (create,
 * publish, register, cancel, redeem) against a local HTTP server that records what the wallet
 * sends. test/e2e/wallet-journey.test.ts runs the same program against the real server.
 */
import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  appendTransfer,
  base45Encode,
  blocklistToJson,
  canonicalKeyOrder,
  developmentBlocklistSeed,
  signBlocklist,
  bytesToHex,
  createPlc,
  decodeTransportText,
  encodeTransport,
  encodeTransportText,
  generateKeyPair,
  hexToBytes,
  parseCancelAuthorizationJson,
  parsePlcJson,
  parseRedeemAuthorizationJson,
  plcToJson,
  verifyCancel,
  verifyPlc,
  verifyRedeem,
  signIssueReceipt,
  withIssueReceipt,
  canonicalReceiptKeyOrder,
  timestampMsMax,
  type Plc,
} from '../../src/protocol/index.ts';
import { closedPortUrl, field, ok, refused, wallet } from './wallet-cli.ts';
import { vectorKey } from '../../scripts/gen-protocol-vectors.ts';

interface Captured {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: unknown;
}

let root: string;
let server: Server;
let serverUrl: string;
const requests: Captured[] = [];
const dirs = { a: '', b: '', c: '' };
const keys = { a: '', b: '', c: '' };
const deviceIds = { a: '', b: '', c: '' };
let tokenId = '';

/** Redemptions the canned server opened, by id, with the status it reports. */
const redemptions = new Map<string, { token_id: string; status: string }>();
/** The refusal the canned server answers the next redeem with (once), if set. */
let nextRedeemRefusal: { status: number; body: unknown } | undefined;

function redemptionView(id: string) {
  const r = redemptions.get(id)!;
  return {
    redemption_id: id,
    token_id: r.token_id,
    status: r.status,
    amount: '12.34',
    fee: '0.00',
    currency: 'BRL',
    gateway_transfer_id: r.status === 'PENDING_PAYMENT' ? null : 'tr-1',
    gateway_status: r.status === 'FAILED' ? 'FAILED' : null,
    failure_reason: r.status === 'FAILED' ? 'refused by the bank' : null,
    status_url: `/api/v1/redemptions/${id}`,
  };
}

/**
 * The PLC with the service's issue receipt (docs/protocol.md section 19), as the server gives it at
 * create: signed by `seed` (by default the development key, which a wallet trusts before any list).
 */
function backed(plc: Plc, seed: Uint8Array = developmentBlocklistSeed, issuedAtMs = Date.now()): Plc {
  return withIssueReceipt(plc, signIssueReceipt({ commitment: plc.commitment, serviceSecretKey: seed, issuedAtMs }));
}

/** The blocklist the canned server serves (GET /api/v1/blocklist), when set. */
let servedBlocklist: unknown;

/** A canned answer per route, shaped like the real server's (api/schemas/plc.ts). */
function answer(method: string, url: string, body: unknown): { status: number; body: unknown } {
  if (method === 'GET' && url === '/api/v1/blocklist') {
    return servedBlocklist === undefined ? { status: 404, body: { code: 'NOT_FOUND', message: 'no list' } } : { status: 200, body: servedBlocklist };
  }
  if (method === 'GET' && /^\/api\/v1\/plc\/[0-9a-f-]+\/status$/.test(url)) return { status: 404, body: { code: 'PLC_NOT_FOUND', message: 'no such PLC' } };
  if (method === 'POST' && url === '/api/v1/plc/create' && (body as { plc: { amount: string } }).plc.amount === '9.99') {
    return { status: 409, body: { code: 'INSUFFICIENT_FUNDS', message: 'not enough AVAILABLE' } };
  }
  if (method === 'POST' && url === '/api/v1/plc/create') {
    // As the real server: the service's issue receipt over the registered commitment.
    const plc = parsePlcJson((body as { plc: unknown }).plc);
    return { status: 200, body: { status: 'ok', issue_receipt: bytesToHex(backed(plc).issueReceipt!) } };
  }
  if (method === 'POST' && url === '/api/v1/redeem/') {
    if (nextRedeemRefusal !== undefined) {
      const refusal = nextRedeemRefusal;
      nextRedeemRefusal = undefined;
      return refusal;
    }
    const id = randomUUID();
    redemptions.set(id, { token_id: (body as { authorization: { token_id: string } }).authorization.token_id, status: 'PENDING_PAYMENT' });
    return { status: 200, body: redemptionView(id) };
  }
  const listed = /^\/api\/v1\/plc\/([0-9a-f-]+)\/redemptions$/.exec(url);
  if (method === 'GET' && listed !== null) {
    // Newest first, as the server lists them.
    return { status: 200, body: [...redemptions.entries()].filter(([, r]) => r.token_id === listed[1]).map(([id]) => redemptionView(id)).reverse() };
  }
  const redemption = /^\/api\/v1\/redemptions\/([0-9a-f-]+)$/.exec(url);
  if (method === 'GET' && redemption !== null) {
    return redemptions.has(redemption[1]!) ? { status: 200, body: redemptionView(redemption[1]!) } : { status: 404, body: { code: 'NOT_FOUND', message: 'no such redemption' } };
  }
  if (method === 'GET' && url.startsWith('/api/v1/balance/')) {
    return { status: 200, body: { owner_id: url.split('/')[4]!.split('?')[0], currency: 'BRL', available: '7.00', held: '0.00', pending: '0.00', promised: '3.00', status: 'ACTIVE' } };
  }
  if (method === 'POST' && url === '/api/v1/transfer/') {
    const plc = parsePlcJson((body as { plc: unknown }).plc);
    const verification = verifyPlc(plc);
    if (!verification.ok) return { status: 422, body: { code: 'PLC_INVALID', message: verification.reason } };
    return {
      status: 200,
      body: {
        token_id: plc.commitment.tokenId,
        status: 'TRANSFERRED',
        chain_length: verification.chainLength,
        bearer_pubkey: bytesToHex(verification.bearerPublicKey),
        head_hash: bytesToHex(verification.headHash),
        appended: verification.chainLength,
      },
    };
  }
  if (method === 'POST' && url === '/api/v1/redeem/') {
    const id = '7d4f6b0e-3c1a-4e55-9a64-0f2b8c1d2e3f';
    return { status: 200, body: { redemption_id: id, status: 'PENDING_PAYMENT', workflow_id: `redemption-${id}` } };
  }
  return { status: 200, body: { status: 'ok' } };
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'wallet-test-'));
  for (const name of ['a', 'b', 'c'] as const) dirs[name] = join(root, name);
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const captured = { method: request.method ?? '', url: request.url ?? '', headers: request.headers, body: text === '' ? null : (JSON.parse(text) as unknown) };
      requests.push(captured);
      const reply = answer(captured.method, captured.url, captured.body);
      response.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no server address');
  serverUrl = `http://127.0.0.1:${address.port}`;
});

function writeJson(name: string, value: unknown): string {
  const path = join(root, name);
  writeFileSync(path, JSON.stringify(value));
  return path;
}

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(root, { recursive: true, force: true });
});

describe('wallet program', () => {
  it('runs on a Node that strips types (24+)', () => {
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(24);
  });

  it('init creates a key pair per wallet, the private key file readable by its owner only', { timeout: 60_000 }, async () => {
    const outputs = await Promise.all((['a', 'b', 'c'] as const).map((name) => ok(dirs[name], 'init')));
    for (const [index, name] of (['a', 'b', 'c'] as const).entries()) {
      keys[name] = field(outputs[index]!, 'public_key');
      deviceIds[name] = field(outputs[index]!, 'device_id');
      expect(statSync(join(dirs[name], 'secret.key')).mode & 0o777).toBe(0o600);
      expect(field(await ok(dirs[name], 'show-key'), 'public_key')).toBe(keys[name]);
    }
    expect(new Set(Object.values(keys)).size).toBe(3);
    await refused(dirs.a, 'already_initialised', 'init');
  });

  it('create signs a PLC locally and registers it with the server', { timeout: 60_000 }, async () => {
    const output = await ok(dirs.a, 'create', '--amount', '12.34', '--currency', 'BRL', '--ttl-hours', '24', '--server', serverUrl);
    tokenId = field(output, 'token_id');
    const request = requests.at(-1)!;
    expect(request).toMatchObject({ method: 'POST', url: '/api/v1/plc/create' });
    expect(request.headers['x-device-id']).toBe(deviceIds.a);
    expect(request.headers['idempotency-key']).toBe(tokenId);
    const plc = parsePlcJson((request.body as { plc: unknown }).plc);
    expect(plc.commitment).toMatchObject({ tokenId, amountMinor: 1234n, currency: 'BRL', expiresAtMs: plc.commitment.createdAtMs + 24 * 3_600_000 });
    expect(bytesToHex(plc.commitment.issuerPublicKey)).toBe(keys.a);
    expect(verifyPlc(plc).ok).toBe(true);
    expect(await ok(dirs.a, 'show', '--token', tokenId)).toMatch(/state:\s+held/);
  });

  it('passes the PLC A -> B -> C -> A through files, each receiver verifying it', { timeout: 120_000 }, async () => {
    await ok(dirs.a, 'send', '--token', tokenId, '--to', keys.b, '--out', join(root, 'ab.txt'));
    expect(readFileSync(join(root, 'ab.txt'), 'utf8')).toMatch(/^PLC2:[0-9A-Z $%*+\-./:]+\n$/);
    await refused(dirs.c, 'not_addressed_to_this_wallet', 'receive', '--in', join(root, 'ab.txt'));
    expect(await ok(dirs.b, 'receive', '--in', join(root, 'ab.txt'))).toContain(`received ${tokenId}`);
    // A copy of B's wallet as it is now: B still holds the PLC here, which lets the test double-spend.
    cpSync(dirs.b, join(root, 'b-clone'), { recursive: true });

    await ok(dirs.b, 'send', '--token', tokenId, '--to', keys.c, '--out', join(root, 'bc.txt'));
    expect(await ok(dirs.c, 'receive', '--in', join(root, 'bc.txt'))).toMatch(/hops:\s+2/);
    const ca = await ok(dirs.c, 'send', '--token', tokenId, '--to', keys.a);
    expect(await ok(dirs.a, 'receive', '--text', ca.trim())).toMatch(/hops:\s+3/);

    const shown = await ok(dirs.a, 'show', '--token', tokenId);
    expect(shown).toMatch(/state:\s+held/);
    expect(shown).toMatch(/verification: ok/);
    expect(shown).toMatch(/chain:\s+3 record/);
    expect(await ok(dirs.b, 'list')).toContain(`${tokenId}  12.34 BRL  2 hop(s)  sent to ${keys.c.slice(0, 12)}`);
    expect(await ok(dirs.c, 'list')).toContain('3 hop(s)  sent to');
  });

  it('refuses tampered input and leaves the receiving wallet unchanged', { timeout: 60_000 }, async () => {
    const genuine = decodeTransportText(readFileSync(join(root, 'bc.txt'), 'utf8').trim());
    // A forged amount in the JSON form: the commitment no longer matches its hash.
    const forgedJson = { ...plcToJson(genuine), amount: '99.99' };
    writeFileSync(join(root, 'forged.json'), JSON.stringify(forgedJson));
    await refused(dirs.c, 'rejected', 'receive', '--in', join(root, 'forged.json'));
    // One flipped byte in the last record's signature, re-encoded as valid PLC2: text.
    const bytes = encodeTransport(genuine);
    // The last record's signature ends where the issue receipt (key 11: 3 bytes of header, 137 of receipt) begins.
    expect(genuine.issueReceipt).toHaveLength(137);
    bytes[bytes.length - 1 - 140]! ^= 0x01;
    writeFileSync(join(root, 'tampered.txt'), `PLC2:${base45Encode(bytes)}\n`);
    const run = await wallet(dirs.c, 'receive', '--in', join(root, 'tampered.txt'));
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('error [rejected]');
    expect(run.stderr).toContain('invalid_signature at record 1');
    // One changed character of the QR text: refused, whichever check catches it.
    const text = readFileSync(join(root, 'bc.txt'), 'utf8').trim();
    const middle = Math.floor(text.length / 2);
    writeFileSync(join(root, 'garbled.txt'), text.slice(0, middle) + (text[middle] === 'A' ? 'B' : 'A') + text.slice(middle + 1));
    expect((await wallet(dirs.c, 'receive', '--in', join(root, 'garbled.txt'))).code).toBe(1);
    await refused(dirs.c, 'invalid_input', 'receive', '--text', 'hello');
    expect(await ok(dirs.c, 'list')).toContain('3 hop(s)  sent to');
  });

  it('refuses a chain with a record timestamped past its clock plus the tolerance', { timeout: 60_000 }, async () => {
    const issuer = generateKeyPair();
    const plc = createPlc({ issuerSecretKey: issuer.secretKey, amountMinor: 100n, currency: 'BRL', createdAtMs: Date.now(), ttlHours: 168 });
    const ahead = appendTransfer(plc, { senderSecretKey: issuer.secretKey, recipientPublicKey: hexToBytes(keys.c, 32), timestampMs: Date.now() + 24 * 3_600_000 });
    const run = await refused(dirs.c, 'timestamp_in_future', 'receive', '--text', encodeTransportText(ahead));
    expect(run.stderr).toContain('record 0');
    await refused(dirs.c, 'unknown_token', 'show', '--token', plc.commitment.tokenId);
  });

  it('refuses a replayed older state and a double spend, keeping the proof', { timeout: 60_000 }, async () => {
    await refused(dirs.b, 'stale_chain', 'receive', '--in', join(root, 'ab.txt'));
    // The clone of B still holds the PLC and signs it again, to A this time: a fork by B.
    await ok(join(root, 'b-clone'), 'send', '--token', tokenId, '--to', keys.a, '--out', join(root, 'double.txt'));
    const run = await wallet(dirs.a, 'receive', '--in', join(root, 'double.txt'));
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`error [fork_detected]: double spend: ${keys.b}`);
    expect(await ok(dirs.a, 'show', '--token', tokenId)).toContain(`FORK:         ${keys.b}`);
    // A, holding a PLC it knows was double-spent upstream, will not pass it on.
    await refused(dirs.a, 'known_fork', 'send', '--token', tokenId, '--to', keys.c);
    await refused(dirs.a, 'known_fork', 'receive', '--in', join(root, 'double.txt'));
    // Sending again from B's real wallet is refused: B is no longer the bearer there.
    await refused(dirs.b, 'not_bearer', 'send', '--token', tokenId, '--to', keys.a);
  });

  it('re-shows the same transfer instead of signing a second one to the same key', { timeout: 60_000 }, async () => {
    const run = await wallet(dirs.b, 'send', '--token', tokenId, '--to', keys.c);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('already sent');
    expect(run.stdout.trim()).toBe(readFileSync(join(root, 'bc.txt'), 'utf8').trim());
  });

  it('register posts the whole chain to /api/v1/transfer/, keyed by token id and head, and prints the answer', { timeout: 60_000 }, async () => {
    // C is no longer the bearer (it sent the PLC on to A), but its copy holds all three hops.
    const stored = JSON.parse(readFileSync(join(dirs.c, 'plcs', `${tokenId}.json`), 'utf8')) as { plc: unknown };
    const output = await ok(dirs.c, 'register', '--token', tokenId, '--server', serverUrl, '--device-id', 'pos-terminal.7');
    const request = requests.at(-1)!;
    expect(request).toMatchObject({ method: 'POST', url: '/api/v1/transfer/' });
    expect(request.body).toEqual({ plc: stored.plc });
    const verification = verifyPlc(parsePlcJson((request.body as { plc: unknown }).plc));
    if (!verification.ok) throw new Error('the posted chain does not verify');
    const headHash = bytesToHex(verification.headHash);
    expect(request.headers['x-device-id']).toBe('pos-terminal.7');
    expect(request.headers['idempotency-key']).toBe(`register-${tokenId}-${headHash}`);
    expect(output).toContain(`registered ${tokenId} with ${serverUrl}`);
    expect(field(output, 'status')).toBe('TRANSFERRED');
    expect(field(output, 'chain_length')).toBe('3');
    expect(field(output, 'bearer')).toBe(keys.a);
    expect(field(output, 'head_hash')).toBe(headHash);

    // A retry sends the same body under the same key (the server answers it from its store);
    // without --device-id the wallet's own device id goes.
    await ok(dirs.a, 'register', '--token', tokenId, '--server', serverUrl);
    const retry = requests.at(-1)!;
    expect(retry.headers['idempotency-key']).toBe(request.headers['idempotency-key']);
    expect(retry.headers['x-device-id']).toBe(deviceIds.a);
    expect(retry.body).toEqual(request.body);

    const before = requests.length;
    await refused(dirs.b, 'unknown_token', 'register', '--token', '00000000-0000-4000-8000-000000000000', '--server', serverUrl);
    // No server given and none remembered: nothing to post to.
    await refused(dirs.c, 'no_server', 'register', '--token', tokenId);
    const run = await wallet(dirs.c, 'register', '--token', tokenId, '--server', serverUrl, '--device-id', 'no spaces');
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('error [usage]');
    expect(requests.length).toBe(before);
  });

  it('publish registers a PLC whose create --server failed, with the same body and key', { timeout: 60_000 }, async () => {
    const down = await closedPortUrl();
    const failed = await refused(dirs.b, 'server_unreachable', 'create', '--amount', '1.50', '--currency', 'EUR', '--ttl-hours', '2', '--server', down);
    const match = /PLC (\S+) is stored in this wallet/.exec(failed.stderr);
    expect(match, failed.stderr).not.toBeNull();
    const created = match![1]!;
    expect(failed.stderr).toContain(`wallet publish --token ${created} --server ${down}`);
    expect(await ok(dirs.b, 'show', '--token', created)).not.toContain('registered:');

    const before = requests.length;
    const output = await ok(dirs.b, 'publish', '--token', created, '--server', serverUrl);
    expect(output).toContain(`published ${created} to ${serverUrl}`);
    const [status, create] = requests.slice(before);
    // It asks first (a create whose answer was lost is already there), then creates.
    expect(status).toMatchObject({ method: 'GET', url: `/api/v1/plc/${created}/status` });
    expect(create).toMatchObject({ method: 'POST', url: '/api/v1/plc/create' });
    expect(create!.headers['idempotency-key']).toBe(created);
    expect(create!.headers['x-device-id']).toBe(deviceIds.b);
    const stored = JSON.parse(readFileSync(join(dirs.b, 'plcs', `${created}.json`), 'utf8')) as { plc: { issue_receipt?: string } };
    // The PLC as signed, and since kept with the issue receipt the create answered.
    const { issue_receipt: receipt, ...signed } = stored.plc;
    expect(create!.body).toEqual({ plc: signed });
    expect(receipt).toMatch(/^01[0-9a-f]{272}$/);
    expect(output).toMatch(/issue receipt: kept/);
    expect(await ok(dirs.b, 'show', '--token', created)).toMatch(/registered:\s+\d{4}-/);

    // Only the issuer publishes; C holds A's PLC but did not issue it.
    await refused(dirs.c, 'not_issuer', 'publish', '--token', tokenId, '--server', serverUrl);
  });

  it('redeem checks the destination before signing, and signs nothing for a key that is not a Pix key', { timeout: 60_000 }, async () => {
    const before = requests.length;
    await refused(dirs.a, 'invalid_destination', 'redeem', '--token', tokenId, '--pix-key', 'not a key', '--server', serverUrl);
    expect(requests.length).toBe(before);
    expect(await ok(dirs.a, 'show', '--token', tokenId)).not.toContain('redeem:');
    // Still free to send: nothing was signed.
    expect(await ok(dirs.a, 'list')).toContain(`${tokenId}  12.34 BRL  3 hop(s)  held`);
  });

  it('redeem after a refusal: recorded, and the bearer signs a new authorisation that the server accepts', { timeout: 60_000 }, async () => {
    nextRedeemRefusal = { status: 422, body: { detail: [{ loc: ['body', 'authorization', 'destination'], msg: 'no such Pix key at the bank', type: 'UNSUPPORTED_RAIL' }] } };
    const run = await refused(dirs.a, 'server_refused', 'redeem', '--token', tokenId, '--pix-key', 'alice@example.com', '--server', serverUrl);
    expect(run.stderr).toContain('sign a new authorisation');
    expect(await ok(dirs.a, 'show', '--token', tokenId)).toMatch(/redeem:.*refused \(UNSUPPORTED_RAIL\)/);

    const printed = await ok(dirs.a, 'redeem', '--token', tokenId, '--pix-key', 'alice@example.com', '--server', serverUrl);
    const request = requests.at(-1)!;
    expect(request).toMatchObject({ method: 'POST', url: '/api/v1/redeem/' });
    expect(request.headers['x-device-id']).toBe(deviceIds.a);
    const body = request.body as { plc: unknown; authorization: unknown };
    const plc = parsePlcJson(body.plc);
    const verification = verifyPlc(plc);
    const authorization = parseRedeemAuthorizationJson(body.authorization);
    expect(verifyRedeem(authorization)).toBe(true);
    expect(verification.ok && bytesToHex(verification.headHash)).toBe(bytesToHex(authorization.headHash));
    expect(bytesToHex(authorization.bearerPublicKey)).toBe(keys.a);
    expect(authorization).toMatchObject({ settlementRail: 'pix', destination: 'alice@example.com' });
    // It prints the redemption's id and status, and remembers them.
    const redemptionId = field(printed, 'redemption_id');
    expect(redemptions.has(redemptionId)).toBe(true);
    expect(field(printed, 'status')).toBe('PENDING_PAYMENT');
    expect(await ok(dirs.a, 'list')).toContain(`redeem: PENDING_PAYMENT (${redemptionId})`);
    // While that redemption is open the wallet signs no other, and it sends the PLC nowhere.
    await refused(dirs.a, 'redemption_open', 'redeem', '--token', tokenId, '--pix-key', 'alice@example.com', '--server', serverUrl);
    await refused(dirs.a, 'token_closed', 'send', '--token', tokenId, '--to', keys.b);

    // status follows it through GET /api/v1/redemptions/{id}; once FAILED the bearer may redeem again.
    redemptions.get(redemptionId)!.status = 'FAILED';
    const status = await ok(dirs.a, 'status', '--token', tokenId, '--server', serverUrl);
    expect(requests.at(-1)).toMatchObject({ method: 'GET', url: `/api/v1/redemptions/${redemptionId}` });
    expect(status).toContain(`redemption:   ${redemptionId}`);
    expect(status).toMatch(/status:\s+FAILED \(refused by the bank\)/);
    expect(status).toContain('can be redeemed again');
    const again = await ok(dirs.a, 'redeem', '--token', tokenId, '--pix-key', '+5511987654321', '--server', serverUrl);
    expect(field(again, 'redemption_id')).not.toBe(redemptionId);
    redemptions.get(field(again, 'redemption_id'))!.status = 'SETTLED';
    expect(await ok(dirs.a, 'status', '--token', tokenId, '--server', serverUrl)).toMatch(/status:\s+SETTLED/);
    // A SETTLED redemption is not "open": the PLC is paid, in the server's words.
    const paid = await refused(dirs.a, 'already_redeemed', 'redeem', '--token', tokenId, '--pix-key', 'alice@example.com', '--server', serverUrl);
    expect(paid.stderr).toContain(`is SETTLED at ${serverUrl}`);
  });

  it('redeem without a server prints the signed body', { timeout: 60_000 }, async () => {
    const issuer = generateKeyPair();
    const plc = createPlc({ issuerSecretKey: issuer.secretKey, amountMinor: 100n, currency: 'BRL', createdAtMs: Date.now(), ttlHours: 2 });
    const sent = appendTransfer(plc, { senderSecretKey: issuer.secretKey, recipientPublicKey: hexToBytes(keys.c, 32), timestampMs: Date.now() });
    await ok(dirs.c, 'receive', '--text', encodeTransportText(backed(sent)));
    const printed = JSON.parse(await ok(dirs.c, 'redeem', '--token', plc.commitment.tokenId, '--pix-key', '12345678909')) as { authorization: unknown };
    expect(verifyRedeem(parseRedeemAuthorizationJson(printed.authorization))).toBe(true);
    expect(await ok(dirs.c, 'show', '--token', plc.commitment.tokenId)).toContain('signed, not posted');
  });

  it('cancel signs for the issuer of an untransferred PLC and posts it', { timeout: 60_000 }, async () => {
    const second = field(await ok(dirs.b, 'create', '--amount', '5', '--currency', 'USD', '--ttl-hours', '1'), 'token_id');
    await refused(dirs.a, 'unknown_token', 'cancel', '--token', second);
    const printed = JSON.parse(await ok(dirs.b, 'cancel', '--token', second, '--server', serverUrl)) as { authorization: unknown };
    const request = requests.at(-1)!;
    expect(request).toMatchObject({ method: 'POST', url: `/api/v1/plc/${second}/cancel` });
    expect(request.body).toEqual(printed);
    const authorization = parseCancelAuthorizationJson(printed.authorization);
    expect(verifyCancel(authorization)).toBe(true);
    expect(bytesToHex(authorization.issuerPublicKey)).toBe(keys.b);
    await refused(dirs.b, 'token_closed', 'send', '--token', second, '--to', keys.c);
    await refused(dirs.c, 'not_issuer', 'cancel', '--token', tokenId);
    await refused(dirs.a, 'already_transferred', 'cancel', '--token', tokenId);
  });

  it('remembers its server (init --server, config) and uses it for every online command', { timeout: 60_000 }, async () => {
    const dir = join(root, 'remembering');
    expect(await ok(dir, 'init', '--server', serverUrl)).toContain(`server:     ${serverUrl}`);
    expect(await ok(dir, 'config')).toBe(`server: ${serverUrl}\nblocklist key: ${bytesToHex(generateKeyPair(developmentBlocklistSeed).publicKey)} (the development key)\n`);
    const created = field(await ok(dir, 'create', '--amount', '1.00', '--currency', 'BRL', '--ttl-hours', '2'), 'token_id');
    expect(requests.at(-1)).toMatchObject({ method: 'POST', url: '/api/v1/plc/create' });
    expect(await ok(dir, 'list')).toContain(`${created}  1.00 BRL  0 hop(s)  held`);
    expect(await ok(dir, 'list')).toContain('server: registered');
    const balance = await ok(dir, 'balance');
    expect(requests.at(-1)).toMatchObject({ method: 'GET', url: `/api/v1/balance/${field(await ok(dir, 'show-key'), 'public_key')}?currency=BRL` });
    expect(balance).toMatch(/available: 7\.00 BRL/);
    expect(balance).toMatch(/promised:\s+3\.00 BRL/);
    // --offline keeps a PLC local even with a server remembered; config --forget-server forgets it.
    const before = requests.length;
    const local = field(await ok(dir, 'create', '--amount', '1.00', '--currency', 'BRL', '--ttl-hours', '2', '--offline'), 'token_id');
    expect(requests.length).toBe(before);
    expect(await ok(dir, 'list')).toContain(`${local}`);
    expect(await ok(dir, 'config', '--forget-server')).toContain('(none');
    await refused(dir, 'no_server', 'balance');
    await refused(dir, 'no_server', 'publish', '--token', local);
    const bad = await wallet(dir, 'config', '--server', 'ftp://example.com');
    expect(bad.code).toBe(2);
  });

  it('a create the server refused keeps nothing; a refused publish is listed as not money, and can be re-issued or dropped', { timeout: 60_000 }, async () => {
    const dir = join(root, 'refused');
    await ok(dir, 'init', '--server', serverUrl);
    const failed = await refused(dir, 'server_refused', 'create', '--amount', '9.99', '--currency', 'BRL', '--ttl-hours', '3');
    const created = /the server refused PLC (\S+) \(INSUFFICIENT_FUNDS\)/.exec(failed.stderr)?.[1];
    expect(created, failed.stderr).toBeDefined();
    expect(failed.stderr).toContain('run the create again');
    expect(existsSync(join(dir, 'plcs', `${created}.json`))).toBe(false);
    expect(await ok(dir, 'list')).toBe('no PLCs\n');
    // Made offline, then refused at publish: kept (the user made it on purpose), marked as not money.
    const offline = field(await ok(dir, 'create', '--amount', '9.99', '--currency', 'BRL', '--ttl-hours', '3', '--offline'), 'token_id');
    const publish = await refused(dir, 'server_refused', 'publish', '--token', offline);
    expect(publish.stderr).toContain(`wallet reissue --token ${offline}`);
    expect(await ok(dir, 'list')).toContain(`${offline}  9.99 BRL  REFUSED by the server (INSUFFICIENT_FUNDS): not backed, nothing booked`);
    // Re-issued: a new PLC of the same amount and life, the old one gone; refused again, the replacement is not kept either.
    const again = await wallet(dir, 'reissue', '--token', offline);
    expect(again.code).toBe(1); // the canned server refuses 9.99 every time
    expect(again.stderr).toContain(`dropped ${offline}`);
    const replacement = /the server refused PLC (\S+)/.exec(again.stderr)?.[1];
    expect(replacement).toBeDefined();
    expect(replacement).not.toBe(offline);
    expect(existsSync(join(dir, 'plcs', `${offline}.json`))).toBe(false);
    expect(await ok(dir, 'list')).toBe('no PLCs\n');
    // Dropped: the server does not know it (asked first), so it is forgotten.
    const another = field(await ok(dir, 'create', '--amount', '9.99', '--currency', 'BRL', '--ttl-hours', '3', '--offline'), 'token_id');
    await refused(dir, 'server_refused', 'publish', '--token', another);
    expect(await ok(dir, 'drop', '--token', another)).toContain(`dropped ${another}`);
    expect(requests.at(-1)).toMatchObject({ method: 'GET', url: `/api/v1/plc/${another}/status` });
    expect(await ok(dir, 'list')).toBe('no PLCs\n');
    // A PLC that was sent on, or a server registered, is never dropped.
    await refused(dirs.a, 'already_transferred', 'drop', '--token', tokenId, '--server', serverUrl);
  });

  it('downloads the signed blocklist, verifies it against the trusted key, and refuses at receive a chain a blocked key signed', { timeout: 120_000 }, async () => {
    const dir = join(root, 'guarded');
    await ok(dir, 'init', '--server', serverUrl);
    const me = hexToBytes(field(await ok(dir, 'show-key'), 'public_key'), 32);
    // The service key of the blocklist test vectors (test/src/protocol/vectors/blocklist-v1.json).
    const service = vectorKey('blocklist-service');
    expect(await ok(dir, 'config', '--blocklist-key', bytesToHex(service.publicKey))).toContain(`blocklist key: ${bytesToHex(service.publicKey)}`);
    expect((await wallet(dir, 'config', '--blocklist-key', 'ab')).code).toBe(2);
    const [issuer, culprit, honest] = [generateKeyPair(), generateKeyPair(), generateKeyPair()];
    const serve = (version: number, keys: Uint8Array[], by = service.secretKey) =>
      (servedBlocklist = blocklistToJson(signBlocklist({ version, publishedAtMs: Date.now(), keys: canonicalKeyOrder(keys) }, by)));
    const make = (from: typeof issuer) => {
      const plc = createPlc({ issuerSecretKey: issuer.secretKey, amountMinor: 100n, currency: 'BRL', createdAtMs: Date.now(), ttlHours: 2, tokenId: randomUUID() });
      const viaFrom = appendTransfer(plc, { senderSecretKey: issuer.secretKey, recipientPublicKey: from.publicKey, timestampMs: Date.now() });
      // Backed: the receipt by the service key this wallet trusts (a v1 list: the list's own key).
      return backed(appendTransfer(viaFrom, { senderSecretKey: from.secretKey, recipientPublicKey: me, timestampMs: Date.now() }), service.secretKey);
    };
    const fromCulprit = make(culprit);

    serve(3, [culprit.publicKey]);
    const listed = await ok(dir, 'blocklist');
    expect(listed).toContain('blocklist: version 3');
    expect(listed).toContain(`blocked: ${bytesToHex(culprit.publicKey)}`);
    const blocked = await refused(dir, 'blocked_signer', 'receive', '--text', encodeTransportText(fromCulprit));
    expect(blocked.stderr).toContain(bytesToHex(culprit.publicKey));
    expect(existsSync(join(dir, 'plcs', `${fromCulprit.commitment.tokenId}.json`))).toBe(false);
    // The issuer is a signer too.
    const issuedByCulprit = backed(
      appendTransfer(
        createPlc({ issuerSecretKey: culprit.secretKey, amountMinor: 100n, currency: 'BRL', createdAtMs: Date.now(), ttlHours: 2, tokenId: randomUUID() }),
        { senderSecretKey: culprit.secretKey, recipientPublicKey: me, timestampMs: Date.now() },
      ),
      service.secretKey,
    );
    await refused(dir, 'blocked_signer', 'receive', '--text', encodeTransportText(issuedByCulprit));
    expect(await ok(dir, 'receive', '--text', encodeTransportText(make(honest)))).toContain('received');

    // A list signed by another key (here the development key) is refused; the kept one stays in force.
    serve(9, [], developmentBlocklistSeed);
    await refused(dir, 'blocklist_invalid', 'blocklist');
    const stillBlocked = await refused(dir, 'blocked_signer', 'receive', '--text', encodeTransportText(fromCulprit));
    expect(stillBlocked.stderr).toContain('could not refresh the blocklist');
    // An older version than the kept one is a rollback: refused.
    serve(2, []);
    await refused(dir, 'blocklist_rollback', 'blocklist');
    await refused(dir, 'blocklist_rollback', 'receive', '--text', encodeTransportText(fromCulprit));
    // Offline, the kept list decides.
    await ok(dir, 'config', '--forget-server');
    await refused(dir, 'blocked_signer', 'receive', '--text', encodeTransportText(fromCulprit));
    // The block lifted: the next version leaves the key out, and the chain is received.
    serve(4, []);
    expect(await ok(dir, 'blocklist', '--server', serverUrl)).toContain('version 4');
    expect(await ok(dir, 'receive', '--text', encodeTransportText(fromCulprit))).toContain(`received ${fromCulprit.commitment.tokenId}`);
    servedBlocklist = undefined;
  });

  it('keeps the receipt the create answered, passes it along with every send, and refuses offline a PLC without a valid one', { timeout: 120_000 }, async () => {
    // A's PLC, created against the canned server, carries the receipt it answered: B and C took it.
    const stored = JSON.parse(readFileSync(join(dirs.c, 'plcs', `${tokenId}.json`), 'utf8')) as { plc: { issue_receipt?: string } };
    expect(stored.plc.issue_receipt).toMatch(/^01[0-9a-f]{272}$/);
    expect(decodeTransportText(readFileSync(join(root, 'ab.txt'), 'utf8').trim()).issueReceipt).toBeDefined();

    const dir = join(root, 'receipts');
    await ok(dir, 'init');
    const me = hexToBytes(field(await ok(dir, 'show-key'), 'public_key'), 32);
    const issuer = generateKeyPair();
    const toMe = () =>
      appendTransfer(createPlc({ issuerSecretKey: issuer.secretKey, amountMinor: 100n, currency: 'BRL', createdAtMs: Date.now(), ttlHours: 2, tokenId: randomUUID() }), {
        senderSecretKey: issuer.secretKey,
        recipientPublicKey: me,
        timestampMs: Date.now(),
      });
    const unbacked = toMe();
    const missing = await refused(dir, 'unbacked', 'receive', '--text', encodeTransportText(unbacked));
    expect(missing.stderr).toContain('carries no issue receipt');
    expect(existsSync(join(dir, 'plcs', `${unbacked.commitment.tokenId}.json`))).toBe(false);
    // A receipt taken from another PLC, one signed by a key nobody trusts, one cut short.
    const donor = backed(toMe());
    const transplanted = withIssueReceipt(unbacked, donor.issueReceipt!);
    expect((await refused(dir, 'unbacked', 'receive', '--text', encodeTransportText(transplanted))).stderr).toContain('[wrong_commitment]');
    const stranger = backed(toMe(), generateKeyPair().secretKey);
    expect((await refused(dir, 'unbacked', 'receive', '--text', encodeTransportText(stranger))).stderr).toContain('[untrusted_key]');
    const cut = withIssueReceipt(unbacked, backed(unbacked).issueReceipt!.slice(0, 100));
    expect((await refused(dir, 'unbacked', 'receive', '--in', writeJson('cut.json', plcToJson(cut)))).stderr).toContain('[truncated]');
    expect(await ok(dir, 'receive', '--text', encodeTransportText(backed(unbacked)))).toContain(`received ${unbacked.commitment.tokenId}`);
  });

  it('learns the receipt keys from the signed blocklist v2: a rotated key is honoured within its period, a revoked one refused at the next refresh', { timeout: 120_000 }, async () => {
    const dir = join(root, 'rotation');
    await ok(dir, 'init', '--server', serverUrl);
    const me = hexToBytes(field(await ok(dir, 'show-key'), 'public_key'), 32);
    const root_ = developmentBlocklistSeed;
    const [oldKey, newKey] = [generateKeyPair(), generateKeyPair()];
    const rotationAtMs = Date.now() - 60_000;
    const issuer = generateKeyPair();
    const toMe = () =>
      appendTransfer(createPlc({ issuerSecretKey: issuer.secretKey, amountMinor: 100n, currency: 'BRL', createdAtMs: Date.now() - 120_000, ttlHours: 2, tokenId: randomUUID() }), {
        senderSecretKey: issuer.secretKey,
        recipientPublicKey: me,
        timestampMs: Date.now(),
      });
    const serveV2 = (version: number, receiptKeys: { publicKey: Uint8Array; validFromMs: number; validUntilMs: number }[]) =>
      (servedBlocklist = blocklistToJson(signBlocklist({ version, publishedAtMs: Date.now(), keys: [], receiptKeys: canonicalReceiptKeyOrder(receiptKeys) }, root_)));
    serveV2(2, [
      { publicKey: oldKey.publicKey, validFromMs: 0, validUntilMs: rotationAtMs },
      { publicKey: newKey.publicKey, validFromMs: rotationAtMs, validUntilMs: timestampMsMax },
    ]);
    const listed = await ok(dir, 'blocklist');
    expect(listed).toContain(`receipt key: ${bytesToHex(oldKey.publicKey)} for receipts issued 1970-01-01T00:00:00.000Z to `);
    expect(listed).toContain(`receipt key: ${bytesToHex(newKey.publicKey)} for receipts issued `);
    const byOld = backed(toMe(), oldKey.secretKey, rotationAtMs - 30_000);
    const byOldTooLate = backed(toMe(), oldKey.secretKey, rotationAtMs + 1);
    const byNew = backed(toMe(), newKey.secretKey, rotationAtMs + 1);
    expect(await ok(dir, 'receive', '--text', encodeTransportText(byOld))).toContain('received');
    expect(await ok(dir, 'receive', '--text', encodeTransportText(byNew))).toContain('received');
    expect((await refused(dir, 'unbacked', 'receive', '--text', encodeTransportText(byOldTooLate))).stderr).toContain('[key_not_valid_at_time]');
    // The development key signs the lists here but is not among the receipt keys of a v2 list.
    expect((await refused(dir, 'unbacked', 'receive', '--text', encodeTransportText(backed(toMe())))).stderr).toContain('[untrusted_key]');
    // The old key revoked: refused at the next refresh, and offline afterwards.
    serveV2(3, [{ publicKey: newKey.publicKey, validFromMs: rotationAtMs, validUntilMs: timestampMsMax }]);
    const again = backed(toMe(), oldKey.secretKey, rotationAtMs - 30_000);
    expect((await refused(dir, 'unbacked', 'receive', '--text', encodeTransportText(again))).stderr).toContain('[untrusted_key]');
    await ok(dir, 'config', '--forget-server');
    await refused(dir, 'unbacked', 'receive', '--text', encodeTransportText(again));
    expect(await ok(dir, 'receive', '--text', encodeTransportText(backed(toMe(), newKey.secretKey)))).toContain('received');
    // Replaying the older list (version 2, the old key still in it) is a rollback: refused.
    serveV2(2, [{ publicKey: oldKey.publicKey, validFromMs: 0, validUntilMs: timestampMsMax }]);
    await refused(dir, 'blocklist_rollback', 'receive', '--text', encodeTransportText(again), '--server', serverUrl);
    servedBlocklist = undefined;
  });

  it('register records that the server registered the chain', { timeout: 30_000 }, async () => {
    expect(await ok(dirs.c, 'show', '--token', tokenId)).toMatch(/registered:\s+\d{4}-/);
    expect(await ok(dirs.c, 'list')).toContain('server: registered');
  });

  it('checks the published test vectors with its own code', { timeout: 30_000 }, async () => {
    const output = await ok(dirs.a, 'vectors');
    expect(output).toContain('ok  crafted Ed25519 cases (40)');
    expect(output).toMatch(/all \d+ vectors verify/);
    const vectors = JSON.parse(readFileSync(new URL('../src/protocol/vectors/protocol-v2.json', import.meta.url), 'utf8')) as { invalid_chains: { expected: { index: number | null } }[] };
    vectors.invalid_chains[0]!.expected.index = 7;
    writeFileSync(join(root, 'broken-vectors.json'), JSON.stringify(vectors));
    await refused(dirs.a, 'rejected', 'vectors', '--in', join(root, 'broken-vectors.json'));
  });

  it('lists in --help every command, and docs/protocol.md section 15 lists each of them', async () => {
    const help = (await ok(dirs.a, 'help')).split('\n');
    const commands = help.filter((line) => /^ {2}[a-z]/.test(line)).map((line) => line.trim().split(/\s+/)[0]!);
    expect(commands).toEqual(expect.arrayContaining(['init', 'config', 'create', 'publish', 'reissue', 'drop', 'send', 'receive', 'show', 'list', 'register', 'cancel', 'redeem', 'status', 'balance', 'vectors']));
    const doc = readFileSync(new URL('../../docs/protocol.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('## 15. Wallet program'), doc.indexOf('## 16.'));
    for (const command of commands) expect(section, command).toMatch(new RegExp(`^${command}\\b`, 'm'));
  });

  it('answers usage errors with exit status 2', { timeout: 30_000 }, async () => {
    for (const args of [['bogus'], ['send', '--token', tokenId], ['create', '--amount', '1', '--currency', 'GBP', '--ttl-hours', '1'], ['create', '--amount', '1', '--currency', 'BRL', '--ttl-hours', '169']]) {
      const run = await wallet(dirs.a, ...args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr).toContain('error [usage]');
    }
  });
});
