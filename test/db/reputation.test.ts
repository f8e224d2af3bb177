import { randomBytes, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postTransaction } from '../../db/ledger.ts';
import { issuePlc, releasePlc } from '../../db/plcs.ts';
import { getReputation, listReputationEventsInOrder, recordReputationEvent, setReputationSettings } from '../../db/reputation.ts';
import { raiseRiskFlag } from '../../db/risk-flags.ts';
import { moneyModel } from '../../src/ledger/money-model.ts';
import {
  applyEvent,
  defaultReputationSettings,
  gatedTier,
  initialReputation,
  reputationEventKinds,
  reputationTiers,
  ruleDelta,
  tierOf,
  type ReputationEventKind,
  type ReputationState,
} from '../../src/reputation/rules.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

/**
 * Reputation in PostgreSQL (migration 24_reputation) against the rules of src/reputation/rules.ts: the same
 * deltas and tiers on the same table, every stored score equal to a replay of the owner's stored
 * events (a property test over random histories), and the events that already happen (a PLC
 * issued or expired, a risk flag) moving the score in their own transaction.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** Replays the stored events with the TypeScript rules, checking each event's delta, score and tier on the way. */
async function replayStored(ownerId: string): Promise<ReputationState> {
  const events = await listReputationEventsInOrder(db.pool, ownerId, 10_000);
  let state = initialReputation;
  for (const event of events) {
    const applied = applyEvent(state, {
      kind: event.kind,
      amountMinor: event.amount_minor,
      severity: event.severity,
      creditEligible: event.credit_eligible,
      pointsLimit: event.points_limit,
    });
    expect({ id: event.id, delta: event.delta, score: event.score_after, tier: event.tier_after }).toEqual({
      id: event.id,
      delta: applied.delta,
      score: applied.state.score,
      tier: applied.tier,
    });
    state = applied.state;
  }
  return state;
}

describe('the database applies the rules of src/reputation/rules.ts', () => {
  const cases: [ReputationEventKind, number, bigint | null, string | null, boolean | null, number | null][] = [
    ...reputationEventKinds.map((kind): [ReputationEventKind, number, bigint | null, string | null, boolean | null, number | null] => [kind, 500, null, null, null, null]),
    ['REDEMPTION_SETTLED', 500, 0n, null, true, 50],
    ['REDEMPTION_SETTLED', 500, 999n, null, true, 50],
    ['REDEMPTION_SETTLED', 500, 1_000n, null, true, 50],
    ['REDEMPTION_SETTLED', 500, 123_456n, null, true, 50],
    ['REDEMPTION_SETTLED', 500, 10n ** 15n, null, true, 50],
    ['REDEMPTION_SETTLED', 500, 10n ** 15n, null, true, 7],
    ['REDEMPTION_SETTLED', 500, 10n ** 15n, null, false, 50],
    ['REDEMPTION_SETTLED', 500, 10n ** 15n, null, null, 50],
    ['RISK_FLAG', 500, null, 'low', null, null],
    ['RISK_FLAG', 700, null, 'medium', null, null],
    ['RISK_FLAG', 300, null, 'high', null, null],
    ['RISK_FLAG', 900, null, 'critical', null, null],
    ['RISK_FLAG', 900, null, 'other', null, null],
    ['INACTIVITY_DECAY', 640, null, null, null, 10],
    ['INACTIVITY_DECAY', 505, null, null, null, 10],
    ['INACTIVITY_DECAY', 500, null, null, null, 10],
    ['INACTIVITY_DECAY', 100, null, null, null, 10],
  ];
  it.each(cases)('rule delta of %s on %i (amount %s, severity %s, eligible %s, points limit %s)', async (kind, score, amountMinor, severity, creditEligible, pointsLimit) => {
    const { rows } = await db.pool.query<{ delta: number }>('SELECT reputation_rule_delta($1, $2, $3, $4, $5, $6) AS delta', [
      kind,
      score,
      amountMinor?.toString() ?? null,
      severity,
      creditEligible,
      pointsLimit,
    ]);
    expect(rows[0]?.delta).toBe(ruleDelta(kind, { amountMinor, severity, creditEligible, pointsLimit }, score));
  });

  it('has the same tiers and bounds', async () => {
    const { rows } = await db.pool.query<{ tier: string; score_min: number; score_max: number }>('SELECT tier, score_min, score_max FROM reputation_tiers ORDER BY rank');
    expect(rows.map((row) => ({ tier: row.tier, scoreMin: row.score_min, scoreMax: row.score_max }))).toEqual(reputationTiers.map((row) => ({ ...row })));
    for (const score of [0, 199, 200, 399, 400, 599, 600, 799, 800, 1000]) {
      for (const sanctioned of [false, true]) {
        const tier = await db.pool.query<{ tier: string }>('SELECT reputation_tier_of($1, $2) AS tier', [score, sanctioned]);
        expect(tier.rows[0]?.tier).toBe(tierOf(score, sanctioned));
      }
    }
  });

  it('gates the upper tiers the same way (the production defaults are the migration\'s)', async () => {
    await setReputationSettings(db.pool, defaultReputationSettings);
    const day = 86_400_000;
    for (const score of [550, 650, 850]) {
      for (const accountAgeMs of [0, 30 * day - 1, 30 * day, 90 * day]) {
        for (const counterparties of [0, 4, 5, 19, 20]) {
          for (const sanctioned of [false, true]) {
            const { rows } = await db.pool.query<{ tier: string }>('SELECT reputation_gated_tier($1, $2, $3, $4) AS tier', [score, sanctioned, accountAgeMs, counterparties]);
            expect([score, accountAgeMs, counterparties, sanctioned, rows[0]?.tier]).toEqual([
              score,
              accountAgeMs,
              counterparties,
              sanctioned,
              gatedTier(score, sanctioned, { accountAgeMs, counterparties }, defaultReputationSettings),
            ]);
          }
        }
      }
    }
  });
});

const eventArbitrary = fc.record({
  kind: fc.constantFrom<ReputationEventKind>('PLC_ISSUED', 'PLC_EXPIRED', 'REDEMPTION_SETTLED', 'REDEMPTION_FAILED', 'RISK_FLAG', 'FORK_PROVEN', 'KEY_BLOCKED'),
  amountMinor: fc.bigInt({ min: 0n, max: 10n ** 7n }),
  severity: fc.constantFrom('low', 'medium', 'high', 'critical'),
  // Some events name a reference already used: recorded once.
  reference: fc.option(fc.constantFrom('r1', 'r2', 'r3'), { nil: null }),
});

describe('stored score == replay of the stored events (property)', () => {
  it('holds over random histories, repeats, settlements with and without a payer, decay and sanctions', async () => {
    await setReputationSettings(db.pool, { ...defaultReputationSettings, decayIdleMs: 86_400_000, decayPoints: 7 });
    await fc.assert(
      fc.asyncProperty(fc.array(eventArbitrary, { minLength: 1, maxLength: 60 }), fc.integer({ min: 0, max: 40 }), async (events, idleDays) => {
        const owner = `prop-${hex(6)}`;
        for (const [index, event] of events.entries()) {
          const facts = { amountMinor: event.kind === 'REDEMPTION_SETTLED' ? event.amountMinor : null, severity: event.kind === 'RISK_FLAG' ? event.severity : null };
          // A payer that has never paid anyone: a closed pair with this owner, so no points; none: no points either.
          const counterparty = event.kind === 'REDEMPTION_SETTLED' && event.reference !== null ? hex(32) : null;
          await recordReputationEvent(db.pool, owner, event.kind, { reason: `test ${event.kind}`, reference: event.reference, counterparty, ...facts });
          // Half-way, the owner goes idle and the score is raised above the start the way a test
          // can: its next events first record the decay due.
          if (index === Math.floor(events.length / 2) && idleDays > 0) {
            await db.pool.query(`UPDATE reputation_scores SET last_credit_at = now() - $2 * interval '1 day' WHERE owner_id = $1`, [owner, idleDays]);
          }
        }
        const stored = await getReputation(db.pool, owner);
        const replayed = await replayStored(owner);
        expect({ score: stored?.score, sanctioned: stored?.sanctioned, tier: stored?.tier }).toEqual({
          score: replayed.score,
          sanctioned: replayed.sanctioned,
          tier: tierOf(replayed.score, replayed.sanctioned),
        });
      }),
      { numRuns: 30, seed: 2126 },
    );
  });
});

async function fundedIssuer(amountMinor: bigint): Promise<string> {
  const owner = hex(32);
  const posting = moneyModel.deposit({ ownerId: owner, currency: 'BRL', amountMinor });
  await postTransaction(db.pool, { idempotencyKey: `fund:${owner}`, txType: posting.txType, referenceType: 'deposit', referenceId: owner, entries: posting.entries });
  return owner;
}

function newPlc(issuerPubkey: string, amountMinor: bigint) {
  const createdAtMs = Date.now();
  return {
    tokenId: randomUUID(),
    issuerPubkey,
    amountMinor,
    currency: 'BRL' as const,
    createdAtMs,
    expiresAtMs: createdAtMs + 3600_000,
    nonce: hex(16),
    commitmentHash: hex(32),
    signature: hex(64),
    deviceId: 'device-reputation',
  };
}

const limits = { amountMaxMinor: 10_000n, dailyLimitMinor: 100_000n };

describe('events that already happen move the score in their own transaction', () => {
  it('a PLC issued (0: issuing proves nothing) and expired (-3), once each, to its issuer; a refused issue records nothing', async () => {
    const issuer = await fundedIssuer(50_000n);
    const plc = newPlc(issuer, 1_000n);
    await issuePlc(db.pool, plc, limits);
    await issuePlc(db.pool, plc, limits); // a retry: the same PLC, nothing new
    expect(await getReputation(db.pool, issuer)).toMatchObject({ score: 500, tier: 'STANDARD' });
    await expect(issuePlc(db.pool, newPlc(issuer, 20_000n), limits)).rejects.toMatchObject({ code: 'PLC_AMOUNT_ABOVE_MAXIMUM' });
    await releasePlc(db.pool, plc.tokenId, 'EXPIRED');
    await releasePlc(db.pool, plc.tokenId, 'EXPIRED');
    const events = await listReputationEventsInOrder(db.pool, issuer, 10);
    expect(events.map((event) => [event.kind, event.delta, event.reference])).toEqual([
      ['PLC_ISSUED', 0, plc.tokenId],
      ['PLC_EXPIRED', -3, plc.tokenId],
    ]);
    expect(await getReputation(db.pool, issuer)).toMatchObject({ score: 497 });
    expect(await replayStored(issuer)).toEqual({ score: 497, sanctioned: false });
  });

  it('a cancelled PLC moves nothing beyond its issue', async () => {
    const issuer = await fundedIssuer(5_000n);
    const plc = newPlc(issuer, 1_000n);
    await issuePlc(db.pool, plc, limits);
    await releasePlc(db.pool, plc.tokenId, 'CANCELLED');
    expect((await listReputationEventsInOrder(db.pool, issuer, 10)).map((event) => event.kind)).toEqual(['PLC_ISSUED']);
  });

  it("a risk flag about an owner's conduct, once per flag (a repeat of the same incident is not a new one); the service's own flags count for no one", async () => {
    const culprit = hex(32);
    const fork = { flagType: 'DOUBLE_SPEND_FORK' as const, severity: 'high' as const, subjectPubkey: culprit, tokenId: randomUUID(), dedupeKey: `fork:${hex(8)}`, details: {} };
    const flag = await raiseRiskFlag(db.pool, fork);
    await raiseRiskFlag(db.pool, fork);
    await raiseRiskFlag(db.pool, { ...fork, flagType: 'OVERDUE_EXPIRY', severity: 'low', dedupeKey: `overdue:${hex(8)}` });
    const events = await listReputationEventsInOrder(db.pool, culprit, 10);
    expect(events.map((event) => [event.kind, event.delta, event.reference, event.severity])).toEqual([['RISK_FLAG', -50, flag.id, 'high']]);
    expect(await getReputation(db.pool, culprit)).toMatchObject({ score: 450, tier: 'STANDARD' });
  });

  it('a proven fork (recordReputationEvent in the caller\'s transaction) puts the owner in RESTRICTED for good; a rollback records nothing', async () => {
    const owner = hex(32);
    await recordReputationEvent(db.pool, owner, 'PLC_ISSUED', { reason: 'PLC issued', reference: randomUUID() });
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await recordReputationEvent(client, owner, 'FORK_PROVEN', { reason: 'fork proven', reference: 'fork-1' });
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    expect(await getReputation(db.pool, owner)).toMatchObject({ score: 500, sanctioned: false });
    await recordReputationEvent(db.pool, owner, 'FORK_PROVEN', { reason: 'fork proven', reference: 'fork-1' });
    expect(await recordReputationEvent(db.pool, owner, 'FORK_PROVEN', { reason: 'fork proven', reference: 'fork-1' })).toBeNull();
    // Good conduct after a sanction still moves the score (here: a settlement with no payer named, no points).
    await recordReputationEvent(db.pool, owner, 'REDEMPTION_SETTLED', { reason: 'settled', reference: 'r', amountMinor: 10n ** 6n });
    expect(await getReputation(db.pool, owner)).toMatchObject({ score: 0, tier: 'RESTRICTED', current_tier: 'RESTRICTED', sanctioned: true, settled_volume_minor: 0n });
    const last = (await listReputationEventsInOrder(db.pool, owner, 10)).map((event) => [event.kind, event.delta, event.score_after, event.tier_after]);
    expect(last).toEqual([
      ['PLC_ISSUED', 0, 500, 'STANDARD'],
      ['FORK_PROVEN', -500, 0, 'RESTRICTED'],
      ['REDEMPTION_SETTLED', 0, 0, 'RESTRICTED'],
    ]);
  });

  it('no longer credits account age: an old account with nothing else earns nothing by waiting', async () => {
    const owner = hex(32);
    await recordReputationEvent(db.pool, owner, 'PLC_ISSUED', { reason: 'PLC issued', reference: 'a' });
    await db.pool.query(`UPDATE reputation_scores SET opened_at = now() - interval '5 years' WHERE owner_id = $1`, [owner]);
    await recordReputationEvent(db.pool, owner, 'PLC_ISSUED', { reason: 'PLC issued', reference: 'b' });
    const events = await listReputationEventsInOrder(db.pool, owner, 50);
    expect(events.map((event) => event.kind)).toEqual(['PLC_ISSUED', 'PLC_ISSUED']);
    expect(await getReputation(db.pool, owner)).toMatchObject({ score: 500, current_tier: 'STANDARD' });
  });
});
