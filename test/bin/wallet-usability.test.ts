/**
 * The wallet program as a newcomer meets it (issue 40): the base URL pasted with or without
 * /api/v1, a 404 of a route never read as an answer, redeem deciding from the server's view of the
 * PLC's redemptions (this wallet's copy only offline, said so), help per command and a suggestion
 * for a typo, refusals with amounts in decimals, a refused create leaving nothing behind, and
 * `list --server`. A child process per command against a local HTTP server that answers like the
 * real API (its not-found handler included: api/plugins/errors.ts).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  appendTransfer,
  createPlc,
  developmentBlocklistSeed,
  generateKeyPair,
  hexToBytes,
  msToIso,
  plcToJson,
  signIssueReceipt,
  withIssueReceipt,
} from '../../src/protocol/index.ts';
import { saveToken } from '../../bin/wallet/store.ts';
import { closedPortUrl, field, ok, refused, wallet } from './wallet-cli.ts';

interface Seen {
  readonly method: string;
  readonly url: string;
}

let root: string;
let server: Server;
let base: string;
const seen: Seen[] = [];
/** The redemptions the server lists per token id (newest first), as GET /api/v1/plc/{id}/redemptions answers. */
const redemptionsByToken = new Map<string, { redemption_id: string; status: string }[]>();
/** The token ids the server registered (POST /api/v1/plc/create answered 200). */
const registered = new Set<string>();
/** What the next POST /api/v1/plc/create answers, when set (once). */
let nextCreate: { status: number; body: unknown } | undefined;

function redemptionView(tokenId: string, redemptionId: string, status: string) {
  return {
    redemption_id: redemptionId,
    token_id: tokenId,
    status,
    amount: '5.00',
    fee: '0.00',
    currency: 'BRL',
    gateway_transfer_id: null,
    gateway_status: null,
    failure_reason: status === 'FAILED' ? 'refused by the bank' : null,
  };
}

/** Shaped like the real API; every path outside /api/v1 meets its not-found handler. */
function answer(method: string, url: string, body: unknown): { status: number; body: unknown } {
  const path = url.split('?')[0]!;
  const noRoute = { status: 404, body: { code: 'NOT_FOUND', message: `no route ${method} ${path}` } };
  if (method === 'GET' && path.startsWith('/api/v1/balance/')) {
    return { status: 200, body: { currency: 'BRL', available: '7.00', held: '0.00', pending: '0.00', promised: '0.00', status: 'ACTIVE' } };
  }
  const status = /^\/api\/v1\/plc\/([0-9a-f-]{36})\/status$/.exec(path);
  if (method === 'GET' && status !== null) {
    if (!registered.has(status[1]!)) return { status: 404, body: { code: 'PLC_NOT_FOUND', message: 'no such PLC' } };
    return {
      status: 200,
      body: { token_id: status[1], status: 'ISSUED', amount: '1.00', currency: 'BRL', commitment_hash: '00'.repeat(32), chain_length: 0, bearer_pubkey: '00'.repeat(32) },
    };
  }
  const listed = /^\/api\/v1\/plc\/([0-9a-f-]{36})\/redemptions$/.exec(path);
  if (method === 'GET' && listed !== null) {
    const tokenId = listed[1]!;
    return { status: 200, body: (redemptionsByToken.get(tokenId) ?? []).map((r) => redemptionView(tokenId, r.redemption_id, r.status)) };
  }
  if (method === 'POST' && path === '/api/v1/plc/create') {
    if (nextCreate !== undefined) {
      const reply = nextCreate;
      nextCreate = undefined;
      return reply;
    }
    registered.add((body as { plc: { token_id: string } }).plc.token_id);
    return { status: 200, body: { status: 'ok' } };
  }
  if (method === 'POST' && path === '/api/v1/redeem/') {
    return { status: 200, body: redemptionView('x', randomUUID(), 'PENDING_PAYMENT') };
  }
  return noRoute;
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'wallet-usability-'));
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      seen.push({ method: request.method ?? '', url: request.url ?? '' });
      const text = Buffer.concat(chunks).toString('utf8');
      const reply = answer(request.method ?? '', request.url ?? '', text === '' ? null : (JSON.parse(text) as unknown));
      response.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no server address');
  base = `http://127.0.0.1:${address.port}`;
});

beforeEach(() => {
  seen.length = 0;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(root, { recursive: true, force: true });
});

/** A PLC of 5.00 BRL issued by a stranger and passed to the wallet in `dir`, stored as received, with `attempts` recorded. */
async function heldPlc(dir: string, attempts: { redemption_id: string; status: string }[]): Promise<string> {
  const own = hexToBytes(field(await ok(dir, 'show-key'), 'public_key'), 32);
  const issuer = generateKeyPair(new Uint8Array(32).fill(7));
  const nowMs = Date.now();
  const plc = createPlc({ issuerSecretKey: issuer.secretKey, amountMinor: 500n, currency: 'BRL', createdAtMs: nowMs - 60_000, ttlHours: 24 });
  const backed = withIssueReceipt(plc, signIssueReceipt({ commitment: plc.commitment, serviceSecretKey: developmentBlocklistSeed, issuedAtMs: nowMs - 60_000 }));
  const held = appendTransfer(backed, { senderSecretKey: issuer.secretKey, recipientPublicKey: own, timestampMs: nowMs - 30_000 });
  const at = msToIso(nowMs - 20_000);
  saveToken(dir, {
    format: 1,
    plc: plcToJson(held),
    updated_at: at,
    registered_at: at,
    cancel_signed_at: null,
    redeem_signed_at: attempts.length === 0 ? null : at,
    forks: [],
    redeem_attempts: attempts.map((attempt) => ({
      signed_at: at,
      timestamp_ms: nowMs - 20_000,
      rail: 'pix' as const,
      destination: 'someone@example.com',
      outcome: 'accepted' as const,
      redemption_id: attempt.redemption_id,
      status: attempt.status,
      code: null,
      updated_at: at,
    })),
  });
  return plc.commitment.tokenId;
}

describe('wallet program: the base URL', () => {
  it('accepts the base with or without /api/v1 and a trailing slash, and keeps it normalised', { timeout: 60_000 }, async () => {
    const dir = join(root, 'bases');
    expect(await ok(dir, 'init', '--server', `${base}/api/v1/`)).toContain(`server:     ${base}\n`);
    for (const given of [base, `${base}/`, `${base}/api/v1`, `${base}/api/v1/`, `${base}//api/v1//`]) {
      await ok(dir, 'create', '--amount', '1.00', '--currency', 'BRL', '--ttl-hours', '2', '--server', given);
      expect(seen.at(-1), given).toEqual({ method: 'POST', url: '/api/v1/plc/create' });
    }
    expect(await ok(dir, 'balance', '--server', `${base}/api/v1`)).toContain('available: 7.00 BRL');
    expect(seen.at(-1)!.url).toMatch(/^\/api\/v1\/balance\/[0-9a-f]{64}\?currency=BRL$/);
    const bad = await wallet(dir, 'balance', '--server', `${base}/api/v1?x=1`);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('without ?query');
  });

  it('refuses to read a 404 of a route as "no account", "not registered" or a refusal, and keeps the PLC publishable', { timeout: 60_000 }, async () => {
    const dir = join(root, 'wrong-base');
    await ok(dir, 'init');
    const wrong = `${base}/settlement`;
    const balance = await refused(dir, 'no_such_route', 'balance', '--server', wrong);
    expect(balance.stdout).toBe('');
    expect(balance.stderr).toContain(`GET ${wrong}/api/v1/balance/`);
    expect(balance.stderr).not.toContain('no account');
    // A create posted to a missing route: not a refusal (nothing recorded as REFUSED), the PLC kept to publish.
    const create = await refused(dir, 'no_such_route', 'create', '--amount', '1.00', '--currency', 'BRL', '--ttl-hours', '2', '--server', wrong);
    const tokenId = /PLC (\S+) is stored in this wallet/.exec(create.stderr)?.[1];
    expect(tokenId, create.stderr).toBeDefined();
    expect(await ok(dir, 'list')).toContain('server: not registered');
    // publish and status ask GET .../status first: a route's 404 there is not "not registered".
    await refused(dir, 'no_such_route', 'publish', '--token', tokenId!, '--server', wrong);
    await refused(dir, 'no_such_route', 'status', '--token', tokenId!, '--server', wrong);
    expect(seen.filter((request) => request.method === 'POST' && request.url.endsWith('/plc/create'))).toHaveLength(1);
    expect(await ok(dir, 'publish', '--token', tokenId!, '--server', `${base}/api/v1`)).toContain(`published ${tokenId} to ${base}\n`);
  });
});

describe('wallet program: redeem asks the server', () => {
  it('redeems again when the server says the redemption this wallet recorded as pending has FAILED', { timeout: 60_000 }, async () => {
    const dir = join(root, 'redeem-failed');
    await ok(dir, 'init', '--server', base);
    const earlier = randomUUID();
    const tokenId = await heldPlc(dir, [{ redemption_id: earlier, status: 'PENDING_PAYMENT' }]);
    redemptionsByToken.set(tokenId, [{ redemption_id: earlier, status: 'FAILED' }]);
    const output = await ok(dir, 'redeem', '--token', tokenId, '--pix-key', 'someone@example.com');
    expect(output).toContain('status:        PENDING_PAYMENT');
    expect(seen.map((request) => `${request.method} ${request.url}`)).toEqual([`GET /api/v1/plc/${tokenId}/redemptions`, 'POST /api/v1/redeem/']);
    // The server's status was recorded beside the new attempt.
    expect(await ok(dir, 'show', '--token', tokenId)).toContain(`FAILED (${earlier})`);
  });

  it('refuses, in the server\'s words, a PLC whose redemption SETTLED, even when this wallet last saw it pending', { timeout: 60_000 }, async () => {
    const dir = join(root, 'redeem-settled');
    await ok(dir, 'init', '--server', base);
    const earlier = randomUUID();
    const tokenId = await heldPlc(dir, [{ redemption_id: earlier, status: 'PENDING_PAYMENT' }]);
    redemptionsByToken.set(tokenId, [{ redemption_id: earlier, status: 'SETTLED' }]);
    const run = await refused(dir, 'already_redeemed', 'redeem', '--token', tokenId, '--pix-key', 'someone@example.com');
    expect(run.stderr).toContain(`redemption ${earlier} is SETTLED at ${base}`);
    expect(seen.some((request) => request.method === 'POST')).toBe(false);
    expect(await ok(dir, 'show', '--token', tokenId)).toContain(`SETTLED (${earlier})`);
  });

  it('refuses a second redeem while the server has one PENDING_PAYMENT that this wallet never recorded', { timeout: 60_000 }, async () => {
    const dir = join(root, 'redeem-open');
    await ok(dir, 'init', '--server', base);
    const tokenId = await heldPlc(dir, []);
    const other = randomUUID();
    redemptionsByToken.set(tokenId, [{ redemption_id: other, status: 'PENDING_PAYMENT' }]);
    const run = await refused(dir, 'redemption_open', 'redeem', '--token', tokenId, '--pix-key', 'someone@example.com');
    expect(run.stderr).toContain(`redemption ${other} of ${tokenId} is PENDING_PAYMENT at ${base}`);
  });

  it('offline, decides from this wallet\'s copy and says that it may be stale', { timeout: 60_000 }, async () => {
    const dir = join(root, 'redeem-offline');
    const down = await closedPortUrl();
    await ok(dir, 'init', '--server', down);
    const earlier = randomUUID();
    const tokenId = await heldPlc(dir, [{ redemption_id: earlier, status: 'SETTLED' }]);
    const run = await refused(dir, 'already_redeemed', 'redeem', '--token', tokenId, '--pix-key', 'someone@example.com');
    expect(run.stderr).toContain(`offline: ${down} cannot be reached`);
    expect(run.stderr).toContain("this wallet's last known status");
  });
});

describe('wallet program: help', () => {
  it('with no arguments prints the usage on stderr and exits 2', { timeout: 30_000 }, async () => {
    const run = await wallet(join(root, 'none'));
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^usage: wallet \[--dir DIR\] <command>/);
  });

  it('shows one command with "help CMD" and "CMD --help"; suggests the command a typo meant', { timeout: 30_000 }, async () => {
    const dir = join(root, 'help');
    for (const args of [['help', 'redeem'], ['redeem', '--help'], ['redeem', '-h']]) {
      const run = await wallet(dir, ...args);
      expect(run.code, args.join(' ')).toBe(0);
      expect(run.stdout).toMatch(/^usage: wallet \[--dir DIR\] redeem --token ID \(--pix-key KEY \| --boleto LINE\) \[--server URL\]\n\n {2}check the key/);
      expect(run.stdout).not.toContain('  create');
    }
    expect(await ok(dir, 'help', 'send')).toContain('[--ur-parts FILE]\n');
    expect((await ok(dir, 'help')).split('\n').length).toBeGreaterThan(40);
    for (const [typed, meant] of [['reedem', 'redeem'], ['lst', 'list'], ['balanse', 'balance'], ['recieve', 'receive'], ['publsh', 'publish']] as const) {
      const run = await wallet(dir, typed);
      expect(run.code, typed).toBe(2);
      expect(run.stderr).toContain(`unknown command "${typed}"; did you mean "${meant}"?`);
    }
    const far = await wallet(dir, 'frobnicate');
    expect(far.stderr).toContain('unknown command "frobnicate"\n');
    const unknownHelp = await wallet(dir, 'help', 'redem');
    expect(unknownHelp.code).toBe(2);
    expect(unknownHelp.stderr).toContain('did you mean "redeem"?');
  });
});

describe('wallet program: refused creates', () => {
  it('prints the amounts of a refusal in decimals and keeps nothing of the refused PLC', { timeout: 60_000 }, async () => {
    const dir = join(root, 'refused-create');
    await ok(dir, 'init', '--server', base);
    nextCreate = { status: 409, body: { code: 'INSUFFICIENT_FUNDS', message: 'insufficient funds', details: { owner_id: 'ab', bucket: 'AVAILABLE', currency: 'BRL', requested_minor: '999' } } };
    const run = await refused(dir, 'server_refused', 'create', '--amount', '9.99', '--currency', 'BRL', '--ttl-hours', '3');
    expect(run.stderr).toContain('answered 409: INSUFFICIENT_FUNDS: insufficient funds (owner id ab, bucket AVAILABLE, requested 9.99 BRL)');
    expect(run.stderr).not.toMatch(/\b999\b/);
    expect(run.stderr).toContain('this wallet kept nothing of it');
    expect(await ok(dir, 'list')).toBe('no PLCs\n');
    expect(readdirSync(join(dir, 'plcs'))).toEqual([]);
    // A 422 in the API's HTTPValidationError shape: its message and ctx in decimals too.
    nextCreate = {
      status: 422,
      body: { detail: [{ loc: ['body', 'amount'], msg: 'a PLC of this device may carry at most 50000 minor units; ask for more', type: 'PLC_AMOUNT_ABOVE_MAXIMUM', ctx: { limit: 'max_amount', amount_max_minor: 50000 } }] },
    };
    const above = await refused(dir, 'server_refused', 'create', '--amount', '600.00', '--currency', 'BRL', '--ttl-hours', '3');
    expect(above.stderr).toContain('PLC_AMOUNT_ABOVE_MAXIMUM: a PLC of this device may carry at most 500.00 BRL; ask for more (limit max_amount, amount max 500.00 BRL)');
    expect(await ok(dir, 'list')).toBe('no PLCs\n');
    // Running the create again, once the cause is gone, is the retry.
    expect(await ok(dir, 'create', '--amount', '9.99', '--currency', 'BRL', '--ttl-hours', '3')).toContain('registered with');
  });
});

describe('wallet program: list', () => {
  it('takes --server and asks it about each PLC; without it, reads only this wallet', { timeout: 60_000 }, async () => {
    const dir = join(root, 'list');
    await ok(dir, 'init');
    const tokenId = field(await ok(dir, 'create', '--amount', '1.00', '--currency', 'BRL', '--ttl-hours', '2', '--server', base), 'token_id');
    const local = field(await ok(dir, 'create', '--amount', '2.00', '--currency', 'BRL', '--ttl-hours', '2'), 'token_id');
    seen.length = 0;
    expect(await ok(dir, 'list')).not.toContain('now:');
    expect(seen).toEqual([]);
    const listed = await ok(dir, 'list', '--server', `${base}/api/v1/`);
    expect(listed).toContain(`${tokenId}  1.00 BRL`);
    expect(listed).toMatch(new RegExp(`^${tokenId}  1\\.00 BRL .* server: registered  now: ISSUED$`, 'm'));
    expect(listed).toMatch(new RegExp(`^${local}  2\\.00 BRL .* server: not registered  now: unknown to the server$`, 'm'));
    expect(seen.map((request) => request.url).sort()).toEqual([`/api/v1/plc/${local}/status`, `/api/v1/plc/${tokenId}/status`].sort());
    const unreachable = await refused(dir, 'server_unreachable', 'list', '--server', await closedPortUrl());
    expect(unreachable.stdout).toBe('');
  });
});
