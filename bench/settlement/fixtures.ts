import { randomUUID } from 'node:crypto';
import {
  appendTransfer,
  bytesToHex,
  chainHeadHash,
  createPlc,
  currentBearer,
  generateKeyPair,
  plcToJson,
  redeemAuthorizationToJson,
  signRedeem,
  type KeyPair,
  type Plc,
} from '../../src/protocol/index.ts';

/**
 * Redemption fixtures, made before any timing: issuers funded through the deposit API, PLCs
 * created through `POST /api/v1/plc/create` (each starts its `plc-<token_id>` workflow and books
 * AVAILABLE -> PROMISED), hops signed offline with the protocol library. The redeem bodies
 * (`signRedeemBodies`) are signed just before each measured phase, because the API refuses an
 * authorisation older than CLOCK_TOLERANCE_MS.
 */

export interface Wallet {
  keys: KeyPair;
  pubkey: string;
}

export function newWallet(): Wallet {
  const keys = generateKeyPair();
  return { keys, pubkey: bytesToHex(keys.publicKey) };
}

export interface PreparedPlc {
  /** The PLC as its last bearer holds it: issued, registered, then hopped offline (not registered). */
  plc: Plc;
  bearer: Wallet;
}

export interface PrepareOptions {
  baseUrl: string;
  adminHeaders: Record<string, string>;
  count: number;
  plcsPerIssuer: number;
  hops: number;
  amountMinor: bigint;
  concurrency: number;
  log: (line: string) => void;
}

async function post(url: string, headers: Record<string, string>, body: unknown): Promise<unknown> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`POST ${new URL(url).pathname} answered ${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as unknown;
}

/** Runs `task` over `items` with at most `concurrency` at a time. */
export async function forEachBounded<T>(items: readonly T[], concurrency: number, task: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const index = next;
        next += 1;
        await task(items[index] as T, index);
      }
    }),
  );
}

function decimal(minor: bigint): string {
  return `${minor / 100n}.${(minor % 100n).toString().padStart(2, '0')}`;
}

export async function preparePlcs(options: PrepareOptions): Promise<PreparedPlc[]> {
  const { log } = options;
  const issuerCount = Math.ceil(options.count / options.plcsPerIssuer);
  const issuers = Array.from({ length: issuerCount }, () => newWallet());
  const fundedAt = performance.now();
  await forEachBounded(issuers, options.concurrency, async (issuer) => {
    await post(`${options.baseUrl}/api/v1/balance/deposit`, { ...options.adminHeaders, 'idempotency-key': randomUUID() }, {
      owner_id: issuer.pubkey,
      amount: decimal(options.amountMinor * BigInt(options.plcsPerIssuer) + 100n),
      currency: 'BRL',
    });
  });
  log(`  funded ${issuerCount} issuers through the deposit API in ${((performance.now() - fundedAt) / 1000).toFixed(1)} s`);

  // PLC i belongs to issuer i % issuerCount: consecutive redemptions come from different issuers.
  const createdAt = performance.now();
  const issued = Array.from({ length: options.count }, (_, i) => {
    const issuer = issuers[i % issuerCount] as Wallet;
    const plc = createPlc({
      issuerSecretKey: issuer.keys.secretKey,
      amountMinor: options.amountMinor,
      currency: 'BRL',
      createdAtMs: Date.now(),
      ttlHours: 24,
      tokenId: randomUUID(),
    });
    return { plc, issuer };
  });
  let done = 0;
  await forEachBounded(issued, options.concurrency, async ({ plc }) => {
    await post(`${options.baseUrl}/api/v1/plc/create`, { 'x-device-id': 'bench-settlement-prep' }, { plc: plcToJson(plc) });
    done += 1;
    if (done % 250 === 0) log(`  created ${done}/${options.count} PLCs`);
  });
  log(`  created ${options.count} PLCs through the API in ${((performance.now() - createdAt) / 1000).toFixed(1)} s`);

  const hoppedAt = performance.now();
  const prepared = issued.map(({ plc, issuer }) => {
    let current = plc;
    let holder = issuer;
    for (let hop = 0; hop < options.hops; hop += 1) {
      const next = newWallet();
      current = appendTransfer(current, { senderSecretKey: holder.keys.secretKey, recipientPublicKey: next.keys.publicKey, timestampMs: Date.now() });
      holder = next;
    }
    return { plc: current, bearer: holder };
  });
  log(`  signed ${options.count * options.hops} offline hops in ${((performance.now() - hoppedAt) / 1000).toFixed(1)} s`);
  return prepared;
}

/** The `POST /api/v1/redeem/` bodies, as JSON text, signed now by each PLC's bearer to a fresh Pix random key. */
export function signRedeemBodies(prepared: readonly PreparedPlc[]): string[] {
  return prepared.map(({ plc, bearer }) => {
    if (bytesToHex(currentBearer(plc)) !== bearer.pubkey) throw new Error('fixture: not the bearer');
    const authorization = signRedeem(
      { tokenId: plc.commitment.tokenId, headHash: chainHeadHash(plc), settlementRail: 'pix', destination: randomUUID(), timestampMs: Date.now() },
      bearer.keys.secretKey,
    );
    return JSON.stringify({ plc: plcToJson(plc), authorization: redeemAuthorizationToJson(authorization) });
  });
}
