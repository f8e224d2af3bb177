import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postTransaction } from '../../db/ledger.ts';
import { appendTransfersBatch, createTransferAppender, issuePlc, isUniqueViolation, type PendingAppend } from '../../db/plcs.ts';
import { moneyModel } from '../../src/ledger/money-model.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

/**
 * The transfer route's group-committed writes: `appendTransfersBatch` (several PLCs' appends in
 * one statement) and `createTransferAppender` (which batches, keeps two appends of one PLC apart,
 * and splits a batch down to the item at fault when a constraint refuses it). The database
 * checks formats, not signatures, so the records here are well-formed random hex.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ poolMax: 12 });
});
afterAll(async () => {
  await db?.drop();
});

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const limits = { amountMaxMinor: 100_000n, dailyLimitMinor: 10_000_000n };

interface Issued {
  tokenId: string;
  issuer: string;
  commitmentHash: string;
}

async function issued(): Promise<Issued> {
  const issuer = hex(32);
  await postTransaction(db.pool, { idempotencyKey: `fund:${issuer}`, ...moneyModel.deposit({ ownerId: issuer, currency: 'BRL', amountMinor: 1000n }) });
  const createdAtMs = Date.now();
  const tokenId = randomUUID();
  const commitmentHash = hex(32);
  await issuePlc(
    db.pool,
    {
      tokenId,
      issuerPubkey: issuer,
      amountMinor: 100n,
      currency: 'BRL',
      createdAtMs,
      expiresAtMs: createdAtMs + 3_600_000,
      nonce: hex(16),
      commitmentHash,
      signature: hex(64),
      deviceId: 'device-db',
    },
    limits,
  );
  return { tokenId, issuer, commitmentHash };
}

/** An append of one hop on top of (length, head), signed by `sender`. */
function hopAppend(tokenId: string, at: { length: number; head: string; sender: string; status: 'ISSUED' | 'TRANSFERRED' }, nonce = hex(16)): PendingAppend {
  const recipient = hex(32);
  const recordHash = hex(32);
  return {
    read: { token_id: tokenId, status: at.status, chain_length: at.length, head_hash: at.head },
    decision: {
      kind: 'extend',
      records: [
        {
          position: at.length,
          senderPubkey: at.sender,
          recipientPubkey: recipient,
          timestampMs: Date.now(),
          nonce,
          prevHash: at.head,
          signature: hex(64),
          recordHash,
        },
      ],
      chainLength: at.length + 1,
      headHash: recordHash,
      bearerPubkey: recipient,
    },
    deviceId: 'device-batch',
  };
}

const firstHop = (plc: Issued) => hopAppend(plc.tokenId, { length: 0, head: plc.commitmentHash, sender: plc.issuer, status: 'ISSUED' });

async function stateOf(tokenId: string) {
  const { rows } = await db.pool.query<{ status: string; chain_length: number; head_hash: string; records: number; outbox: number }>(
    `SELECT p.status, p.chain_length, p.head_hash,
            (SELECT count(*)::int FROM plc_transfers t WHERE t.token_id = p.token_id) AS records,
            (SELECT count(*)::int FROM plc_status_outbox o WHERE o.token_id = p.token_id) AS outbox
       FROM plcs p WHERE p.token_id = $1`,
    [tokenId],
  );
  return rows[0];
}

describe('appendTransfersBatch', () => {
  it('appends each PLC that is as read, answers null for one that is not, and queues first hops for the workflow', async () => {
    const plcs = await Promise.all(Array.from({ length: 4 }, () => issued()));
    const items = plcs.map(firstHop);
    // The last one was decided against a head the PLC does not have.
    const stale = { ...items[3]!, read: { ...items[3]!.read, head_hash: hex(32) } };
    const heads = await appendTransfersBatch(db.pool, [...items.slice(0, 3), stale]);
    expect(heads.slice(0, 3).map((head) => head?.chain_length)).toEqual([1, 1, 1]);
    expect(heads[3]).toBeNull();
    for (const [k, plc] of plcs.entries()) {
      const state = await stateOf(plc.tokenId);
      if (k < 3) {
        expect(state).toEqual({ status: 'TRANSFERRED', chain_length: 1, head_hash: items[k]!.decision.headHash, records: 1, outbox: 1 });
        expect(heads[k]).toMatchObject({ token_id: plc.tokenId, status: 'TRANSFERRED', bearer_pubkey: items[k]!.decision.bearerPubkey });
      } else {
        expect(state).toEqual({ status: 'ISSUED', chain_length: 0, head_hash: plc.commitmentHash, records: 0, outbox: 0 });
      }
    }
  });

  it('changes nothing at all when one item breaks a constraint', async () => {
    const [a, b] = await Promise.all([issued(), issued()]);
    const first = firstHop(a!);
    await appendTransfersBatch(db.pool, [first]);
    const reusedNonce = hopAppend(a!.tokenId, { length: 1, head: first.decision.headHash, sender: first.decision.bearerPubkey, status: 'TRANSFERRED' }, first.decision.records[0]!.nonce);
    const error = await appendTransfersBatch(db.pool, [firstHop(b!), reusedNonce]).catch((failure: unknown) => failure);
    expect(isUniqueViolation(error, 'plc_transfers_nonce_unique')).toBe(true);
    expect(await stateOf(b!.tokenId)).toMatchObject({ status: 'ISSUED', records: 0, outbox: 0 });
    expect(await stateOf(a!.tokenId)).toMatchObject({ chain_length: 1, records: 1 });
  });
});

describe('createTransferAppender', () => {
  it('lets exactly one of two appends on the same head of a PLC win, for many PLCs at once', async () => {
    const appender = createTransferAppender(db.pool, { maxBatch: 16, inFlightMax: 2 });
    const plcs = await Promise.all(Array.from({ length: 12 }, () => issued()));
    const attempts = plcs.flatMap((plc) => [firstHop(plc), firstHop(plc)]);
    const heads = await Promise.all(attempts.map((item) => appender.append(item)));
    for (const [k, plc] of plcs.entries()) {
      const pair = [heads[2 * k], heads[2 * k + 1]];
      expect(pair.filter((head) => head !== null)).toHaveLength(1);
      const winner = pair[0] === null ? attempts[2 * k + 1]! : attempts[2 * k]!;
      expect(await stateOf(plc.tokenId)).toEqual({ status: 'TRANSFERRED', chain_length: 1, head_hash: winner.decision.headHash, records: 1, outbox: 1 });
    }
  });

  it('gives the constraint violation to its own item only, and appends the others of its batch', async () => {
    const appender = createTransferAppender(db.pool, { maxBatch: 16, inFlightMax: 1 });
    const a = await issued();
    const first = firstHop(a);
    expect(await appender.append(first)).not.toBeNull();
    const others = await Promise.all(Array.from({ length: 5 }, () => issued()));
    const reusedNonce = hopAppend(a.tokenId, { length: 1, head: first.decision.headHash, sender: first.decision.bearerPubkey, status: 'TRANSFERRED' }, first.decision.records[0]!.nonce);
    const outcomes = await Promise.allSettled([reusedNonce, ...others.map(firstHop)].map((item) => appender.append(item)));
    expect(outcomes[0]?.status).toBe('rejected');
    expect(isUniqueViolation((outcomes[0] as PromiseRejectedResult).reason, 'plc_transfers_nonce_unique')).toBe(true);
    expect(outcomes.slice(1).every((outcome) => outcome.status === 'fulfilled' && outcome.value !== null)).toBe(true);
    for (const plc of others) expect(await stateOf(plc.tokenId)).toMatchObject({ status: 'TRANSFERRED', records: 1 });
  });

  it("gives any item's own failure (a CHECK, a bad value) to that item alone, however big the batch", async () => {
    const appender = createTransferAppender(db.pool, { maxBatch: 64, inFlightMax: 1 });
    const plcs = await Promise.all(Array.from({ length: 24 }, () => issued()));
    const items = plcs.map((plc, i) => ({ ...firstHop(plc), deviceId: i % 6 === 1 ? `boom-${i}` : 'device-batch' }));
    await db.pool.query(`ALTER TABLE plc_transfers ADD CONSTRAINT test_no_boom CHECK (device_id NOT LIKE 'boom%')`);
    try {
      const outcomes = await Promise.allSettled(items.map((item) => appender.append(item)));
      for (const [i, outcome] of outcomes.entries()) {
        if (i % 6 === 1) {
          expect(outcome).toMatchObject({ status: 'rejected', reason: { code: '23514', constraint: 'test_no_boom' } });
          expect(await stateOf(plcs[i]!.tokenId)).toMatchObject({ status: 'ISSUED', chain_length: 0, records: 0, outbox: 0 });
        } else {
          expect(outcome.status === 'fulfilled' && outcome.value !== null).toBe(true);
          expect(await stateOf(plcs[i]!.tokenId)).toMatchObject({ status: 'TRANSFERRED', chain_length: 1, records: 1, outbox: 1 });
        }
      }
    } finally {
      await db.pool.query(`ALTER TABLE plc_transfers DROP CONSTRAINT test_no_boom`);
    }
  });

  it('isolates an item whose status-outbox row is refused: its hop is not appended either, the others are appended and queued', async () => {
    const appender = createTransferAppender(db.pool, { maxBatch: 64, inFlightMax: 1 });
    const plcs = await Promise.all(Array.from({ length: 10 }, () => issued()));
    const refused = plcs[4]!.tokenId;
    await db.pool.query(`ALTER TABLE plc_status_outbox ADD CONSTRAINT test_refuse_one CHECK (token_id <> '${refused}')`);
    try {
      const outcomes = await Promise.allSettled(plcs.map((plc) => appender.append(firstHop(plc))));
      expect(outcomes.map((o) => o.status)).toEqual(plcs.map((plc) => (plc.tokenId === refused ? 'rejected' : 'fulfilled')));
    } finally {
      await db.pool.query(`ALTER TABLE plc_status_outbox DROP CONSTRAINT test_refuse_one`);
    }
    for (const plc of plcs) {
      expect(await stateOf(plc.tokenId)).toMatchObject(
        plc.tokenId === refused ? { status: 'ISSUED', records: 0, outbox: 0 } : { status: 'TRANSFERRED', records: 1, outbox: 1 },
      );
    }
  });
});
