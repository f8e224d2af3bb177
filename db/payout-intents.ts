import { z } from 'zod';
import type { PayoutRail } from '../src/settlement/payout-destination.ts';
import { withTransaction, type Pool, type Queryable } from './pool.ts';
import { maybeOne, one } from './sql.ts';
import { redemptionColumns, redemptionRow, type RedemptionRow } from './redemptions.ts';

/**
 * Payout intents (migration 34_payout_intents; docs/settlement.md "One payout per redemption"):
 * what a redemption's activity is about to ask the gateway for, recorded before it asks, and the
 * one payout the gateway's validation approved for it.
 */

export const payoutIntentRow = z.object({
  redemption_id: z.string().uuid(),
  attempt: z.number().int(),
  rail: z.enum(['pix', 'boleto']),
  amount_minor: z.bigint(),
  destination: z.string(),
  created_at: z.date(),
  claimed_payout_id: z.string().nullable(),
  claimed_at: z.date().nullable(),
});
export type PayoutIntentRow = z.infer<typeof payoutIntentRow>;

const columns = 'redemption_id, attempt, rail, amount_minor, destination, created_at, claimed_payout_id, claimed_at';

/**
 * Records the intent of the redemption's current attempt (idempotent): `created` is false when an
 * earlier run of the activity recorded it already, which means a request may have reached the
 * gateway and its answer been lost.
 */
export async function recordPayoutIntent(
  db: Queryable,
  input: { redemptionId: string; attempt: number; rail: PayoutRail; amountMinor: bigint; destination: string },
): Promise<{ intent: PayoutIntentRow; created: boolean }> {
  const inserted = await maybeOne(db, payoutIntentRow, {
    prepare: true,
    name: 'payout-intent-insert',
    text: `INSERT INTO payout_intents (redemption_id, attempt, rail, amount_minor, destination) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (redemption_id, attempt) DO NOTHING RETURNING ${columns}`,
    values: [input.redemptionId, input.attempt, input.rail, input.amountMinor, input.destination],
  });
  if (inserted !== null) return { intent: inserted, created: true };
  const existing = await one(db, payoutIntentRow, {
    prepare: true,
    name: 'payout-intent-get',
    text: `SELECT ${columns} FROM payout_intents WHERE redemption_id = $1 AND attempt = $2`,
    values: [input.redemptionId, input.attempt],
  });
  return { intent: existing, created: false };
}

export function getPayoutIntent(db: Queryable, redemptionId: string, attempt: number): Promise<PayoutIntentRow | null> {
  return maybeOne(db, payoutIntentRow, {
    prepare: true,
    name: 'payout-intent-get',
    text: `SELECT ${columns} FROM payout_intents WHERE redemption_id = $1 AND attempt = $2`,
    values: [redemptionId, attempt],
  });
}

/**
 * The open payout intent a gateway reference names: the redemption (by its id, the payouts'
 * `externalReference`) waiting for its payout, with the intent of its current attempt. Null when
 * the reference is not a redemption id, the redemption is final, or no intent was recorded for its
 * current attempt: a validation request about it is refused without a gateway read.
 */
export async function findOpenPayoutIntent(db: Queryable, externalReference: string | null): Promise<{ redemption: RedemptionRow; intent: PayoutIntentRow } | null> {
  if (externalReference === null || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(externalReference)) return null;
  const redemption = await maybeOne(db, redemptionRow, {
    prepare: true,
    name: 'payout-intent-redemption',
    text: `SELECT ${redemptionColumns} FROM redemptions WHERE id = $1 AND status = 'PENDING_PAYMENT'`,
    values: [externalReference.toLowerCase()],
  });
  if (redemption === null) return null;
  const intent = await getPayoutIntent(db, redemption.id, redemption.payout_attempt);
  return intent === null ? null : { redemption, intent };
}

export type PayoutClaim =
  | { claimed: true; redemption: RedemptionRow; intent: PayoutIntentRow; first: boolean }
  | { claimed: false; reason: string; redemption: RedemptionRow | null; claimedPayoutId: string | null };

/**
 * Claims `payoutId` as the one payout of the redemption's current attempt, atomically under the
 * redemption's row lock: the first payout claimed is recorded on the intent and as the
 * redemption's `gateway_transfer_id` (when none is recorded yet) in one transaction, before the
 * validation's answer leaves. The same payout claimed again (the gateway asks again after a lost
 * answer) is claimed still; any other payout is not.
 */
export async function claimPayout(pool: Pool, input: { redemptionId: string; payoutId: string }): Promise<PayoutClaim> {
  return withTransaction(pool, async (client) => {
    const redemption = await maybeOne(client, redemptionRow, {
      name: 'payout-claim-lock',
      text: `SELECT ${redemptionColumns} FROM redemptions WHERE id = $1 FOR UPDATE`,
      values: [input.redemptionId],
    });
    if (redemption === null) return { claimed: false, reason: 'no such redemption', redemption: null, claimedPayoutId: null };
    if (redemption.status !== 'PENDING_PAYMENT') return { claimed: false, reason: `redemption is ${redemption.status}`, redemption, claimedPayoutId: null };
    const intent = await getPayoutIntent(client, redemption.id, redemption.payout_attempt);
    if (intent === null) return { claimed: false, reason: 'no payout intent is open for this redemption', redemption, claimedPayoutId: null };
    if (intent.claimed_payout_id !== null) {
      return intent.claimed_payout_id === input.payoutId
        ? { claimed: true, redemption, intent, first: false }
        : { claimed: false, reason: `another payout (${intent.claimed_payout_id}) was approved for this redemption`, redemption, claimedPayoutId: intent.claimed_payout_id };
    }
    if (redemption.gateway_transfer_id !== null && redemption.gateway_transfer_id !== input.payoutId) {
      return { claimed: false, reason: `the redemption's payout is ${redemption.gateway_transfer_id}`, redemption, claimedPayoutId: redemption.gateway_transfer_id };
    }
    const claimed = await one(client, payoutIntentRow, {
      name: 'payout-claim',
      text: `UPDATE payout_intents SET claimed_payout_id = $3, claimed_at = now() WHERE redemption_id = $1 AND attempt = $2 RETURNING ${columns}`,
      values: [redemption.id, intent.attempt, input.payoutId],
    });
    const recorded = await one(client, redemptionRow, {
      name: 'payout-claim-record',
      text: `UPDATE redemptions SET gateway_transfer_id = $2, updated_at = now() WHERE id = $1 RETURNING ${redemptionColumns}`,
      values: [redemption.id, input.payoutId],
    });
    return { claimed: true, redemption: recorded, intent: claimed, first: true };
  });
}

/**
 * Records the payout found or created for the redemption's current attempt unless another one is
 * recorded already (the validation claimed it first): answers the row as it is after, whose
 * `gateway_transfer_id` is the payout to follow.
 */
export async function recordFoundPayout(db: Queryable, redemptionId: string, payoutId: string, gatewayStatus: string): Promise<RedemptionRow> {
  const recorded = await maybeOne(db, redemptionRow, {
    name: 'payout-record-found',
    text: `UPDATE redemptions SET gateway_transfer_id = coalesce(gateway_transfer_id, $2), gateway_status = $3, payout_error = NULL, updated_at = now()
            WHERE id = $1 AND (gateway_transfer_id IS NULL OR gateway_transfer_id = $2) RETURNING ${redemptionColumns}`,
    values: [redemptionId, payoutId, gatewayStatus],
  });
  if (recorded !== null) return recorded;
  return one(db, redemptionRow, { name: 'payout-record-found-current', text: `SELECT ${redemptionColumns} FROM redemptions WHERE id = $1`, values: [redemptionId] });
}

/** The payouts earlier attempts of a redemption closed (their late words move nothing). */
export async function closedPayoutIds(db: Queryable, redemptionId: string): Promise<Set<string>> {
  const rows = await maybeOne(db, z.object({ ids: z.array(z.string()) }), {
    name: 'payout-closed-ids',
    text: `SELECT coalesce(array_agg(gateway_transfer_id) FILTER (WHERE gateway_transfer_id IS NOT NULL), '{}') AS ids
             FROM redemption_payout_attempts WHERE redemption_id = $1`,
    values: [redemptionId],
  });
  return new Set(rows?.ids ?? []);
}
