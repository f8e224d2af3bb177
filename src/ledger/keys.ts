/**
 * The ledger's idempotency keys of the business bookings, in one place: the booking code books
 * under them (`ledgerKeys.redemptionFail.of(id)`) and the SQL that asks whether a booking exists
 * builds the same key from a column (`ledgerKeys.redemptionFail.sql('r.id')`), so the two cannot
 * drift apart. A key is `<area>:<id>:<event>`. The PLC issue is booked by the `plc_issue` database
 * function (migration 11_plc_issue), whose text spells `plc:<token_id>:issue` itself: a migration
 * is never edited, so that one copy stays, held to this module by the ledger tests.
 */

export interface LedgerKey {
  /** The key of the booking of `id` (a token id, redemption id or charge id). */
  of(id: string): string;
  /** The same key as a SQL expression over `idExpression` (a column or parameter of uuid or text type). */
  sql(idExpression: string): string;
}

function ledgerKey(area: 'plc' | 'redemption' | 'charge' | 'plc-evidence', event: string): LedgerKey {
  return {
    of: (id) => `${area}:${id}:${event}`,
    sql: (idExpression) => `'${area}:' || ${idExpression} || ':${event}'`,
  };
}

export const ledgerKeys = {
  /** Issuer AVAILABLE -> PROMISED, when a PLC is created (booked by the `plc_issue` function). */
  plcIssue: ledgerKey('plc', 'issue'),
  /** PROMISED -> AVAILABLE, when a PLC expires or is cancelled. */
  plcRelease: ledgerKey('plc', 'release'),
  /** Issuer PROMISED -> bearer PENDING, when a redemption opens. */
  redemptionRequest: ledgerKey('redemption', 'request'),
  /** Bearer PENDING -> the world (and the fee), when the payout is done. */
  redemptionSettle: ledgerKey('redemption', 'settle'),
  /** Bearer PENDING -> issuer PROMISED, when the payout failed. */
  redemptionFail: ledgerKey('redemption', 'fail'),
  /** World PENDING -> owner PENDING, when a charge is created at the gateway. */
  chargeCreated: ledgerKey('charge', 'created'),
  /** Owner PENDING -> AVAILABLE, when the charge is paid. */
  chargeSettle: ledgerKey('charge', 'settle'),
  /** The charge's PENDING reversed, when it will not be paid. */
  chargeFail: ledgerKey('charge', 'fail'),
  /** Issuer AVAILABLE -> bearer AVAILABLE, an operator's compensation against a cancel-after-transfer evidence (once per evidence). */
  bearerCompensation: ledgerKey('plc-evidence', 'compensate'),
} as const;

/**
 * The ledger idempotency key of an admin deposit: its Idempotency-Key, namespaced. The deposit
 * activity books under it and the deposit route looks a booking up by it.
 */
export function depositLedgerKey(idempotencyKey: string): string {
  return `deposit:${idempotencyKey}`;
}
