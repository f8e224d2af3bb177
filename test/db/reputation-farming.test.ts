import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { postTransaction } from '../../db/ledger.ts';
import { readLimitFacts } from '../../db/plc-limits.ts';
import { issuePlc } from '../../db/plcs.ts';
import { getReputation, listReputationEventsInOrder, setReputationSettings } from '../../db/reputation.ts';
import { raiseRiskFlag } from '../../db/risk-flags.ts';
import { moneyModel } from '../../src/ledger/money-model.ts';
import { defaultReputationSettings, type ReputationSettings } from '../../src/reputation/rules.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Reputation that cannot be farmed (issue 34, docs/limits-and-fees.md): the settlements a bearer is
 * paid, written as the service writes them (a PLC issued from the payer's device, its transfer to
 * the bearer, the redemption settled), move the bearer's score through the triggers of migration
 * 30. The farming of the issue (sixty PLCs of 0.01 between two wallets of one person reached
 * PREMIUM in 79 s) reaches nothing; an honest merchant paid by independent customers does reach
 * the next tier, once its account is old enough.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const wallet = () => hex(32);
const issueLimits = { amountMaxMinor: 10n ** 9n, dailyLimitMinor: 10n ** 10n };

async function fund(owner: string, amountMinor: bigint): Promise<void> {
  const posting = moneyModel.deposit({ ownerId: owner, currency: 'BRL', amountMinor });
  await postTransaction(db.pool, { idempotencyKey: `fund:${owner}:${hex(4)}`, txType: posting.txType, referenceType: 'deposit', referenceId: owner, entries: posting.entries });
}

/** `payer` issues a PLC from its device, transfers it to `bearer`, who redeems it from its own device; the payout settles. */
async function settle(payer: { key: string; device: string }, bearer: { key: string; device: string }, amountMinor: bigint): Promise<string> {
  const tokenId = randomUUID();
  const createdAtMs = Date.now();
  const commitment = hex(32);
  await issuePlc(
    db.pool,
    {
      tokenId,
      issuerPubkey: payer.key,
      amountMinor,
      currency: 'BRL',
      createdAtMs,
      expiresAtMs: createdAtMs + 3_600_000,
      nonce: hex(16),
      commitmentHash: commitment,
      signature: hex(64),
      deviceId: payer.device,
    },
    issueLimits,
  );
  await db.pool.query(
    `INSERT INTO plc_transfers (token_id, position, sender_pubkey, recipient_pubkey, timestamp_ms, nonce, prev_hash, signature, record_hash, device_id)
     VALUES ($1, 0, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [tokenId, payer.key, bearer.key, createdAtMs, hex(16), commitment, hex(64), hex(32), bearer.device],
  );
  const id = randomUUID();
  await db.pool.query(
    `INSERT INTO redemptions (id, token_id, bearer_pubkey, bearer_owner_id, issuer_owner_id, amount_minor, currency, rail, destination,
                              destination_type, head_hash, chain_length, status, request_tx_id, device_id)
     VALUES ($1, $2, $3, $3, $4, $5, 'BRL', 'pix', 'bearer@example.com', 'EMAIL', $6, 1, 'PENDING_PAYMENT', gen_random_uuid(), $7)`,
    [id, tokenId, bearer.key, payer.key, amountMinor.toString(), hex(32), bearer.device],
  );
  await db.pool.query(`UPDATE redemptions SET status = 'SETTLED', settle_tx_id = gen_random_uuid(), finished_at = now() WHERE id = $1`, [id]);
  return id;
}

async function heldTier(owner: string) {
  const facts = await readLimitFacts(db.pool, owner, 'any-device');
  return { tier: facts.tier, score: facts.score };
}

/** The settings of a test: seconds where production has days. */
const fast: ReputationSettings = {
  ...defaultReputationSettings,
  gainWindowMs: 60_000,
  gainPerWindowMax: 500,
  decayIdleMs: 3_600_000,
  tierGates: {
    ...defaultReputationSettings.tierGates,
    TRUSTED: { accountAgeMinMs: 2_000, counterpartiesMin: 5 },
    PREMIUM: { accountAgeMinMs: 4_000, counterpartiesMin: 20 },
  },
};

beforeEach(async () => {
  await setReputationSettings(db.pool, fast);
});

describe('the farming of issue 34 reaches nothing', () => {
  it('sixty PLCs of 0.01 paid between two wallets of one person on one phone: no point, no tier, no volume', async () => {
    const phone = `phone-${hex(4)}`;
    const payer = { key: wallet(), device: phone };
    const bearer = { key: wallet(), device: phone };
    await fund(payer.key, 10_000n);
    const started = Date.now();
    for (let index = 0; index < 60; index += 1) await settle(payer, bearer, 1n);
    expect(Date.now() - started).toBeLessThan(79_000);
    for (const owner of [payer.key, bearer.key]) {
      expect(await heldTier(owner)).toEqual({ tier: 'STANDARD', score: 500 });
    }
    const reputation = await getReputation(db.pool, bearer.key);
    expect(reputation).toMatchObject({ score: 500, counterparties: 0, settled_volume_minor: 0n, current_tier: 'STANDARD' });
    const events = await listReputationEventsInOrder(db.pool, bearer.key, 100);
    expect(events).toHaveLength(60);
    expect(events.every((event) => event.kind === 'REDEMPTION_SETTLED' && event.delta === 0 && event.credit_eligible === false && event.counterparty === payer.key)).toBe(true);
  });

  it('the same with real amounts from two phones, when the two wallets have only ever paid each other', async () => {
    const payer = { key: wallet(), device: `phone-${hex(4)}` };
    const bearer = { key: wallet(), device: `phone-${hex(4)}` };
    await fund(payer.key, 10n ** 7n);
    for (let index = 0; index < 60; index += 1) await settle(payer, bearer, 50_000n);
    expect(await heldTier(bearer.key)).toEqual({ tier: 'STANDARD', score: 500 });
    expect(await getReputation(db.pool, bearer.key)).toMatchObject({ counterparties: 0, settled_volume_minor: 0n });
  });

  it('wallets of one account (the same recovery e-mail) or one backup count as one owner, even when they pay others too', async () => {
    const payer = { key: wallet(), device: `phone-${hex(4)}` };
    const twin = { key: wallet(), device: `phone-${hex(4)}` };
    const bearer = { key: wallet(), device: `phone-${hex(4)}` };
    const stranger = { key: wallet(), device: `phone-${hex(4)}` };
    await fund(payer.key, 10n ** 7n);
    // The payer paid a stranger too: the pair is not closed, so only the account links them.
    await settle(payer, stranger, 50_000n);
    const email = `${hex(4)}@example.com`;
    for (const owner of [payer.key, bearer.key]) {
      await db.pool.query(
        `INSERT INTO pin_records (owner_id, client_salt, verifier, server_salt, scrypt_log2_n, scrypt_r, scrypt_p, pepper_id, recovery_email)
         VALUES ($1, $2, $3, $4, 14, 8, 1, $5, $6)`,
        // The same address, written in another case by the second key.
        [owner, hex(16), randomBytes(32), randomBytes(16), hex(8), owner === payer.key ? email : email.toUpperCase()],
      );
    }
    await settle(payer, bearer, 50_000n);
    expect(await getReputation(db.pool, bearer.key)).toMatchObject({ score: 500, counterparties: 0 });
    // One backup (the same encrypted seed) under two keys: the twin is the payer.
    const seed = randomBytes(64);
    await db.pool.query(`INSERT INTO key_backups (public_key, device_id, encrypted_seed) VALUES ($1, $2, $4), ($3, $5, $4)`, [payer.key, payer.device, twin.key, seed, twin.device]);
    const other = { key: wallet(), device: `phone-${hex(4)}` };
    for (const key of [other, twin]) await fund(key.key, 10n ** 6n);
    await settle(other, stranger, 50_000n);
    await settle(twin, stranger, 50_000n);
    await settle(payer, stranger, 50_000n);
    const strangerEvents = await listReputationEventsInOrder(db.pool, stranger.key, 10);
    expect(strangerEvents.map((event) => [event.counterparty, event.credit_eligible, event.delta])).toEqual([
      // The payer's first settlement with a newcomer: a closed pair then, nothing credited.
      [payer.key, false, 0],
      [other.key, true, 25],
      [twin.key, true, 25],
      // The payer again: independent of the stranger now, but one owner with the twin credited in the window.
      [payer.key, false, 0],
    ]);
    expect(await getReputation(db.pool, stranger.key)).toMatchObject({ score: 550, counterparties: 2 });
  });

  it('a risk flag takes back every point earned', async () => {
    const merchant = { key: wallet(), device: `shop-${hex(4)}` };
    const customers = Array.from({ length: 3 }, () => ({ key: wallet(), device: `phone-${hex(4)}` }));
    for (const customer of customers) {
      await fund(customer.key, 10n ** 6n);
      await settle(customer, merchant, 20_000n);
    }
    expect(await getReputation(db.pool, merchant.key)).toMatchObject({ score: 550 });
    await raiseRiskFlag(db.pool, { flagType: 'DOUBLE_REDEMPTION_ATTEMPT', severity: 'low', subjectPubkey: merchant.key, tokenId: randomUUID(), dedupeKey: `flag:${hex(8)}`, details: {} });
    expect(await getReputation(db.pool, merchant.key)).toMatchObject({ score: 495 });
  });
});

describe('an honest merchant reaches the next tier, from independent customers, over time', () => {
  it('six customers on their own phones pay 200.00 each: five count (the first was a closed pair then), TRUSTED once the account is old enough', async () => {
    const merchant = { key: wallet(), device: `shop-${hex(4)}` };
    const customers = Array.from({ length: 6 }, () => ({ key: wallet(), device: `phone-${hex(4)}` }));
    for (const customer of customers) {
      await fund(customer.key, 10n ** 6n);
      await settle(customer, merchant, 20_000n);
    }
    // Two keys of one customer (one phone) count once: points for neither, no new counterparty.
    const sibling = { key: wallet(), device: customers[1]?.device ?? '' };
    await fund(sibling.key, 10n ** 6n);
    await settle(sibling, merchant, 20_000n);
    // The same customer again inside the window: volume, no points.
    await settle(customers[2] ?? merchant, merchant, 20_000n);

    const reputation = await getReputation(db.pool, merchant.key);
    expect(reputation).toMatchObject({ score: 625, counterparties: 5, settled_volume_minor: 7n * 20_000n, tier: 'TRUSTED' });
    const events = await listReputationEventsInOrder(db.pool, merchant.key, 20);
    expect(events.map((event) => event.delta)).toEqual([0, 25, 25, 25, 25, 25, 0, 0]);
    // The tier held waits for the account's age (2 s here, 30 days in production).
    const opened = reputation?.opened_at.getTime() ?? 0;
    if (Date.now() - opened < fast.tierGates.TRUSTED.accountAgeMinMs - 200) expect((await heldTier(merchant.key)).tier).toBe('STANDARD');
    await waitFor(async () => (await heldTier(merchant.key)).tier === 'TRUSTED', { what: 'the merchant to hold TRUSTED', timeoutMs: 15_000, intervalMs: 200 });
    expect(await heldTier(merchant.key)).toEqual({ tier: 'TRUSTED', score: 625 });
  });

  it('with the production cap, one day of the same settlements gives at most 50 points: STANDARD still', async () => {
    await setReputationSettings(db.pool, { ...fast, gainPerWindowMax: defaultReputationSettings.gainPerWindowMax });
    const merchant = { key: wallet(), device: `shop-${hex(4)}` };
    for (let index = 0; index < 8; index += 1) {
      const customer = { key: wallet(), device: `phone-${hex(4)}` };
      await fund(customer.key, 10n ** 6n);
      await settle(customer, merchant, 20_000n);
    }
    expect(await getReputation(db.pool, merchant.key)).toMatchObject({ score: 550, counterparties: 7 });
  });

  it('decays without activity, back toward 500 and no further, one step per idle period', async () => {
    await setReputationSettings(db.pool, { ...fast, decayIdleMs: 1_000, decayPoints: 10 });
    const merchant = { key: wallet(), device: `shop-${hex(4)}` };
    for (let index = 0; index < 3; index += 1) {
      const customer = { key: wallet(), device: `phone-${hex(4)}` };
      await fund(customer.key, 10n ** 6n);
      await settle(customer, merchant, 20_000n);
    }
    const before = await getReputation(db.pool, merchant.key);
    expect(before?.score).toBe(550);
    // Read as of now: lower with every idle second, never below 500.
    await waitFor(async () => (await heldTier(merchant.key)).score <= 530, { what: 'the decay to show', timeoutMs: 15_000, intervalMs: 200 });
    // The next event records the steps due as INACTIVITY_DECAY events, then itself.
    await db.pool.query(`UPDATE reputation_scores SET last_credit_at = now() - interval '1 hour' WHERE owner_id = $1`, [merchant.key]);
    const { rows } = await db.pool.query<{ id: string }>(`SELECT reputation_record($1, 'PLC_EXPIRED', 'test', $2, 1, NULL)::text AS id`, [merchant.key, randomUUID()]);
    expect(rows[0]?.id).not.toBeNull();
    const events = await listReputationEventsInOrder(db.pool, merchant.key, 50);
    const decays = events.filter((event) => event.kind === 'INACTIVITY_DECAY');
    expect(decays.map((event) => event.delta)).toEqual([-10, -10, -10, -10, -10]);
    expect(await getReputation(db.pool, merchant.key)).toMatchObject({ score: 497 });
  });
});
