import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findViolations, postTransaction } from '../../db/ledger.ts';
import { DomainError } from '../../src/errors.ts';
import { moneyModel } from '../../src/ledger/money-model.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

/** Fixes of migration 7 (ledger_post v2), each pinned by the case that exposed it. */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe('ledger_post: a replay is the same references (NULLs included) under any hash version; verify finds a transaction without movements', () => {
  it('tells apart postings whose references differ only by where a NULL sits', async () => {
    const key = `test:${randomUUID()}`;
    const posting = moneyModel.deposit({ ownerId: 'alice', currency: 'BRL', amountMinor: 100n });
    await postTransaction(db.pool, { idempotencyKey: key, txType: posting.txType, referenceType: 'x', entries: posting.entries });
    const reused = await postTransaction(db.pool, { idempotencyKey: key, txType: posting.txType, referenceId: 'x', entries: posting.entries }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(reused).toBeInstanceOf(DomainError);
    expect((reused as DomainError).code).toBe('IDEMPOTENCY_KEY_REUSED');
  });

  it('still recognises a replay of a transaction booked with the first version of the hash', async () => {
    const key = `test:${randomUUID()}`;
    const posting = moneyModel.deposit({ ownerId: 'bob', currency: 'BRL', amountMinor: 100n });
    const first = await postTransaction(db.pool, { idempotencyKey: key, txType: posting.txType, entries: posting.entries });
    const entries = JSON.stringify(posting.entries.map((e) => ({ owner_id: e.ownerId, bucket: e.bucket, currency: e.currency, amount_minor: e.amountMinor.toString() })));
    // Rewrite the stored hash to what version 1 computed (bypassing the append-only trigger).
    const client = await db.pool.connect();
    try {
      await client.query(`SET session_replication_role = replica`);
      await client.query(`UPDATE ledger_transactions SET request_hash = ledger_request_hash_v1('DEPOSIT', NULL, NULL, $2::jsonb) WHERE id = $1`, [
        first.transactionId,
        entries,
      ]);
    } finally {
      await client.query(`SET session_replication_role = origin`);
      client.release();
    }
    const replay = await postTransaction(db.pool, { idempotencyKey: key, txType: posting.txType, entries: posting.entries });
    expect(replay).toEqual({ transactionId: first.transactionId, created: false });
  });

  it('ledger verify reports a ledger transaction written without movements (refused at COMMIT until migration 12)', async () => {
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      const tx = await client.query<{ id: string }>(`INSERT INTO ledger_transactions (idempotency_key, request_hash, tx_type) VALUES ($1, 'h', 'DEPOSIT') RETURNING id`, [
        `raw:${randomUUID()}`,
      ]);
      const violations = await findViolations(client, 1000);
      expect(violations).toContainEqual({ kind: 'transaction_without_entries', subject: tx.rows[0]?.id, detail: 'no movement' });
    } finally {
      await client.query('ROLLBACK').catch(() => {});
      client.release();
    }
  });
});
