import { z } from 'zod';
import { ledgerKeys } from '../../../src/ledger/keys.ts';
import { chargeRepairPlan, type ChargeRepairFacts } from '../../../src/reconciliation/ledger-repairs.ts';
import { many, maybeOne } from '../../sql.ts';
import { currencyEnum, existingTx, hasTx } from '../shared.ts';
import { pointRowAt, rowRepairPhase } from './row-repair.ts';

/** Charges whose settlement or failure booking is missing (fix-charge-settlements, fix-failed-pending). */

const chargeRepairRow = z.object({
  id: z.string().uuid(),
  owner_id: z.string(),
  amount_minor: z.bigint(),
  currency: currencyEnum,
  reference_tx_id: z.string().uuid().nullable(),
});
type ChargeRepairRow = z.infer<typeof chargeRepairRow>;
const chargeRepairColumns = `c.id, c.owner_id, c.amount_minor, c.currency, ${existingTx('c.created_tx_id')}`;

const chargeId = (row: ChargeRepairRow) => row.id;

function facts(row: ChargeRepairRow): ChargeRepairFacts {
  return { chargeId: row.id, ownerId: row.owner_id, currency: row.currency, amountMinor: row.amount_minor, referenceTransactionId: row.reference_tx_id };
}

/**
 * fix-charge-settlements: SETTLED charges without their CHARGE_SETTLED (`charge:<id>:settle`,
 * the key db/charges.ts finishCharge books under): the money model's charge-paid move (owner
 * PENDING reversed, owner AVAILABLE credited from world AVAILABLE, world PENDING closed), booked
 * now with that key and the charge's settle_tx_id pointed at it.
 */
export const settledChargesPhase = rowRepairPhase<ChargeRepairRow>({
  name: 'settled-charges',
  candidates: (db, _ctx, after, limit) =>
    many(db, chargeRepairRow, {
      name: 'reconcile-settled-charges',
      text: `SELECT ${chargeRepairColumns} FROM charges c
              WHERE c.status = 'SETTLED' AND ($1::uuid IS NULL OR c.id > $1) AND NOT ${hasTx(ledgerKeys.chargeSettle.sql('c.id'))}
              ORDER BY c.id LIMIT $2`,
      values: [after, limit],
    }),
  recheck: (client, _ctx, key) =>
    maybeOne(client, chargeRepairRow, {
      name: 'reconcile-settled-charge-lock',
      text: `SELECT ${chargeRepairColumns} FROM charges c
              WHERE c.id = $1 AND c.status = 'SETTLED' AND NOT ${hasTx(ledgerKeys.chargeSettle.sql('c.id'))} FOR UPDATE OF c`,
      values: [key],
    }),
  key: chargeId,
  plan: (row) => chargeRepairPlan(facts(row), 'SETTLE'),
  afterPost: pointRowAt('reconcile-settled-charge-point', 'UPDATE charges SET settle_tx_id = $2 WHERE id = $1', chargeId),
});

/**
 * fix-failed-pending, charges: FAILED charges whose CHARGE_CREATED was booked but whose
 * CHARGE_FAILED (`charge:<id>:fail`) never was: the owner's PENDING still shows money that will
 * never come. Booked with finishCharge's key; the charge's fail_tx_id is pointed at it.
 */
export const failedChargesPhase = rowRepairPhase<ChargeRepairRow>({
  name: 'failed-charges',
  candidates: (db, _ctx, after, limit) =>
    many(db, chargeRepairRow, {
      name: 'reconcile-failed-charges',
      text: `SELECT ${chargeRepairColumns} FROM charges c
              WHERE c.status = 'FAILED' AND ($1::uuid IS NULL OR c.id > $1)
                AND ${hasTx(ledgerKeys.chargeCreated.sql('c.id'))} AND NOT ${hasTx(ledgerKeys.chargeFail.sql('c.id'))}
              ORDER BY c.id LIMIT $2`,
      values: [after, limit],
    }),
  recheck: (client, _ctx, key) =>
    maybeOne(client, chargeRepairRow, {
      name: 'reconcile-failed-charge-lock',
      text: `SELECT ${chargeRepairColumns} FROM charges c
              WHERE c.id = $1 AND c.status = 'FAILED'
                AND ${hasTx(ledgerKeys.chargeCreated.sql('c.id'))} AND NOT ${hasTx(ledgerKeys.chargeFail.sql('c.id'))}
              FOR UPDATE OF c`,
      values: [key],
    }),
  key: chargeId,
  plan: (row) => chargeRepairPlan(facts(row), 'FAIL'),
  afterPost: pointRowAt('reconcile-failed-charge-point', 'UPDATE charges SET fail_tx_id = $2 WHERE id = $1', chargeId),
});
