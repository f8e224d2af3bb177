import { randomUUID } from 'node:crypto';
import type { DatabaseError } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getBalances, postTransaction } from '../../db/ledger.ts';
import type { DomainError } from '../../src/errors.ts';
import { moneyModel, txTypes, type Entry } from '../../src/ledger/money-model.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

/** Migration 8 (ledger_post v3: legs as arrays, the hash as an expression); kept by migration 12. */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  await postTransaction(db.pool, { idempotencyKey: `seed:${randomUUID()}`, ...moneyModel.deposit({ ownerId: 'carol', currency: 'BRL', amountMinor: 10_000n }) });
});
afterAll(async () => {
  await db?.drop();
});

const jsonLegs = (entries: readonly Entry[]) =>
  JSON.stringify(entries.map((e) => ({ owner_id: e.ownerId, bucket: e.bucket, currency: e.currency, amount_minor: e.amountMinor.toString() })));

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => null,
    (error: unknown) => error,
  );
}

describe('ledger_post: a replay is the same legs in any order and either form (JSON or arrays), under any hash version; tx_type is the money model', () => {
  it('replays a retry that lists the same legs in another order', async () => {
    const key = `test:${randomUUID()}`;
    const posting = moneyModel.plcIssued({ issuerId: 'carol', currency: 'BRL', amountMinor: 100n });
    const first = await postTransaction(db.pool, { idempotencyKey: key, txType: posting.txType, entries: posting.entries });
    const replay = await postTransaction(db.pool, { idempotencyKey: key, txType: posting.txType, entries: [...posting.entries].reverse() });
    expect(first.created).toBe(true);
    expect(replay).toEqual({ transactionId: first.transactionId, created: false });
  });

  it('the JSON form ledger_post and postTransaction book the same posting under one key once', async () => {
    const key = `test:${randomUUID()}`;
    const posting = moneyModel.plcIssued({ issuerId: 'carol', currency: 'BRL', amountMinor: 7n });
    const viaJson = await db.pool.query<{ transaction_id: string; created: boolean }>(
      `SELECT * FROM ledger_post($1, $2, NULL, NULL, NULL, $3::jsonb, false)`,
      [key, posting.txType, jsonLegs([...posting.entries].reverse())],
    );
    expect(viaJson.rows[0]?.created).toBe(true);
    const replay = await postTransaction(db.pool, { idempotencyKey: key, txType: posting.txType, entries: posting.entries });
    expect(replay).toEqual({ transactionId: viaJson.rows[0]?.transaction_id, created: false });
  });

  it('still recognises a replay of a transaction booked with the second version of the hash', async () => {
    const key = `test:${randomUUID()}`;
    const posting = moneyModel.plcIssued({ issuerId: 'carol', currency: 'BRL', amountMinor: 3n });
    const first = await postTransaction(db.pool, { idempotencyKey: key, txType: posting.txType, entries: posting.entries });
    const client = await db.pool.connect();
    try {
      await client.query(`SET session_replication_role = replica`);
      await client.query(`UPDATE ledger_transactions SET request_hash = ledger_request_hash_v2($2, NULL, NULL, $3::jsonb) WHERE id = $1`, [
        first.transactionId,
        posting.txType,
        jsonLegs(posting.entries),
      ]);
    } finally {
      await client.query(`SET session_replication_role = origin`);
      client.release();
    }
    expect(await postTransaction(db.pool, { idempotencyKey: key, txType: posting.txType, entries: posting.entries })).toEqual({
      transactionId: first.transactionId,
      created: false,
    });
    const other = await errorOf(
      postTransaction(db.pool, { idempotencyKey: key, txType: posting.txType, entries: moneyModel.plcIssued({ issuerId: 'carol', currency: 'BRL', amountMinor: 4n }).entries }),
    );
    expect((other as DomainError).code).toBe('IDEMPOTENCY_KEY_REUSED');
  });

  it.each([
    { why: 'arrays of different lengths', owners: ['carol', 'dave'], buckets: ['AVAILABLE'], amounts: ['-1', '1'] },
    { why: 'one leg', owners: ['carol'], buckets: ['AVAILABLE'], amounts: ['-1'] },
    { why: 'a NULL amount', owners: ['carol', 'dave'], buckets: ['AVAILABLE', 'AVAILABLE'], amounts: ['-1', null] },
  ])('refuses $why with PL005 and books nothing', async ({ owners, buckets, amounts }) => {
    const error = await errorOf(
      db.pool.query(`SELECT * FROM ledger_post_legs($1, 'RECONCILIATION', NULL, NULL, NULL, $2::text[], $3::text[], $4::text[], $5::bigint[], false)`, [
        `test:${randomUUID()}`,
        owners,
        buckets,
        owners.map(() => 'BRL'),
        amounts,
      ]),
    );
    expect((error as DatabaseError).code).toBe('PL005');
  });

  it('the tx_type enum holds exactly the money model\'s transaction types, and refuses any other', async () => {
    const range = await db.pool.query<{ value: string }>(`SELECT unnest(enum_range(NULL::ledger_tx_type))::text AS value`);
    expect(range.rows.map((row) => row.value)).toEqual([...txTypes]);
    const error = await errorOf(
      db.pool.query(`SELECT * FROM ledger_post_legs($1, 'NOT_A_TYPE', NULL, NULL, NULL, ARRAY['carol', 'dave'], ARRAY['AVAILABLE', 'AVAILABLE'], ARRAY['BRL', 'BRL'], ARRAY[-1, 1]::bigint[], false)`, [
        `test:${randomUUID()}`,
      ]),
    );
    expect((error as DatabaseError).code).toBe('22P02');
    expect(await getBalances(db.pool, 'dave', 'BRL')).toEqual({ available: 0n, held: 0n, pending: 0n, promised: 0n });
  });
});
