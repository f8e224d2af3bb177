import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findViolations, getBalances, postTransaction } from '../../db/ledger.ts';
import { issuePlc, type NewPlc } from '../../db/plcs.ts';
import { DomainError } from '../../src/errors.ts';
import { moneyModel } from '../../src/ledger/money-model.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

/**
 * `issuePlc`, one call of `plc_issue` (migration 11): the same checks, in the same order and under
 * the same lock, as the 8-statement transaction it replaced, and a refusal leaves nothing behind.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ poolMax: 24 });
});
afterAll(async () => {
  await db?.drop();
});

const limits = { amountMaxMinor: 1000n, dailyLimitMinor: 1500n };
const hex = (bytes: number) => randomBytes(bytes).toString('hex');

function newPlc(issuerPubkey: string, amountMinor: bigint): NewPlc {
  const createdAtMs = Date.now();
  return {
    tokenId: randomUUID(),
    issuerPubkey,
    amountMinor,
    currency: 'BRL',
    createdAtMs,
    expiresAtMs: createdAtMs + 3600_000,
    nonce: hex(16),
    commitmentHash: hex(32),
    signature: hex(64),
    deviceId: 'device-db',
  };
}

async function fundedIssuer(amountMinor: bigint): Promise<string> {
  const issuer = hex(32);
  await postTransaction(db.pool, { idempotencyKey: `fund:${issuer}`, ...moneyModel.deposit({ ownerId: issuer, currency: 'BRL', amountMinor }) });
  return issuer;
}

async function refusalOf(promise: Promise<unknown>): Promise<DomainError> {
  const error = await promise.then(
    () => null,
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(DomainError);
  return error as DomainError;
}

/** What a refused create must not have left: a PLC row, a posting, an account it created. */
async function traces(tokenId: string, issuer: string) {
  const { rows } = await db.pool.query<{ plcs: string; postings: string; accounts: string }>(
    `SELECT (SELECT count(*) FROM plcs WHERE token_id = $1)::text AS plcs,
            (SELECT count(*) FROM ledger_transactions WHERE idempotency_key = 'plc:' || $1 || ':issue')::text AS postings,
            (SELECT count(*) FROM ledger_accounts WHERE owner_id = $2)::text AS accounts`,
    [tokenId, issuer],
  );
  return rows[0];
}

describe('issuePlc (plc_issue)', () => {
  it('stores the PLC ISSUED with its posting, and answers a retry with the stored row without booking again', async () => {
    const issuer = await fundedIssuer(5000n);
    const plc = newPlc(issuer, 700n);
    const first = await issuePlc(db.pool, plc, limits);
    expect(first.created).toBe(true);
    expect(first.plc).toMatchObject({
      token_id: plc.tokenId,
      status: 'ISSUED',
      amount_minor: 700n,
      issuer_owner_id: issuer,
      bearer_pubkey: issuer,
      head_hash: plc.commitmentHash,
      chain_length: 0,
      created_at_ms: BigInt(plc.createdAtMs),
      expires_at_ms: BigInt(plc.expiresAtMs),
      device_id: 'device-db',
    });
    expect(first.plc.created_at.getTime()).toBe(plc.createdAtMs);
    const retry = await issuePlc(db.pool, plc, limits);
    expect(retry).toEqual({ created: false, plc: first.plc });
    expect(await getBalances(db.pool, issuer, 'BRL')).toMatchObject({ available: 4300n, promised: 700n });
    expect(await traces(plc.tokenId, issuer)).toEqual({ plcs: '1', postings: '1', accounts: '1' });
  });

  it('refuses another PLC under a token id already taken, changing nothing', async () => {
    const issuer = await fundedIssuer(5000n);
    const plc = newPlc(issuer, 100n);
    await issuePlc(db.pool, plc, limits);
    const refusal = await refusalOf(issuePlc(db.pool, { ...plc, commitmentHash: hex(32) }, limits));
    expect(refusal).toMatchObject({ code: 'PLC_ALREADY_EXISTS', details: { token_id: plc.tokenId } });
    expect(await getBalances(db.pool, issuer, 'BRL')).toMatchObject({ available: 4900n, promised: 100n });
  });

  it.each([
    ['above the per-PLC maximum', 1001n, 5000n, false, { code: 'PLC_AMOUNT_ABOVE_MAXIMUM', details: { field: 'amount', amount_max_minor: '1000' } }],
    ['from a frozen account', 100n, 5000n, true, { code: 'ACCOUNT_FROZEN', message: 'the issuer account is frozen: it can receive but not spend' }],
    ['without the funds', 600n, 500n, false, { code: 'INSUFFICIENT_FUNDS' }],
  ])('refuses a PLC %s, leaving no PLC and no posting', async (_name, amountMinor, fundsMinor, frozen, expected) => {
    const issuer = await fundedIssuer(fundsMinor);
    if (frozen) await db.pool.query(`UPDATE ledger_accounts SET status = 'FROZEN' WHERE owner_id = $1`, [issuer]);
    const plc = newPlc(issuer, amountMinor);
    const refusal = await refusalOf(issuePlc(db.pool, plc, limits));
    expect(refusal).toMatchObject(expected);
    if (expected.code === 'ACCOUNT_FROZEN') expect(refusal.details).toEqual({ owner_id: issuer });
    expect(await traces(plc.tokenId, issuer)).toEqual({ plcs: '0', postings: '0', accounts: '1' });
    expect(await getBalances(db.pool, issuer, 'BRL')).toMatchObject({ available: fundsMinor, promised: 0n });
  });

  it('refuses beyond the daily limit with what was issued, and an unknown issuer leaves no account behind', async () => {
    const issuer = await fundedIssuer(5000n);
    await issuePlc(db.pool, newPlc(issuer, 1000n), limits);
    const plc = newPlc(issuer, 501n);
    const refusal = await refusalOf(issuePlc(db.pool, plc, limits));
    expect(refusal).toMatchObject({
      code: 'PLC_DAILY_LIMIT_EXCEEDED',
      details: { daily_limit_minor: '1500', issued_last_24h_minor: '1000' },
    });
    expect(await traces(plc.tokenId, issuer)).toEqual({ plcs: '0', postings: '0', accounts: '1' });
    // An issuer never seen: its account is created on first use, inside the refused statement.
    const stranger = hex(32);
    const unfunded = newPlc(stranger, 100n);
    expect(await refusalOf(issuePlc(db.pool, unfunded, limits))).toMatchObject({ code: 'INSUFFICIENT_FUNDS' });
    expect(await traces(unfunded.tokenId, stranger)).toEqual({ plcs: '0', postings: '0', accounts: '0' });
  });

  it('holds the daily limit under concurrency: of 20 parallel creates of 1.00 against 15.00 a day, exactly 15 succeed', async () => {
    const issuer = await fundedIssuer(100_000n);
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => issuePlc(db.pool, newPlc(issuer, 100n), limits)));
    const refused = results.filter((result) => result.status === 'rejected').map((result) => (result.reason as DomainError).code);
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(15);
    expect(refused).toEqual(Array.from({ length: 5 }, () => 'PLC_DAILY_LIMIT_EXCEEDED'));
    expect(await getBalances(db.pool, issuer, 'BRL')).toMatchObject({ available: 98_500n, promised: 1500n });
    expect(await findViolations(db.pool)).toEqual([]);
  });
});
