import { z } from 'zod';
import { DomainError } from '../src/errors.ts';
import { payoutDestinationTypes, type PayoutDestinationType, type PayoutRail } from '../src/settlement/payout-destination.ts';
import { moneyModel } from '../src/ledger/money-model.ts';
import type { KnownRecord, RegistrationDecision } from '../src/plc/register-transfers.ts';
import { keyBlockedError } from './blocklist.ts';
import { bookFor } from './ledger.ts';
import { appendTransfersBatch, isUniqueViolation, listTransfers, plcRow, toKnownRecord, type PlcRow } from './plcs.ts';
import { withTransaction, type Pool, type PoolClient, type Queryable } from './pool.ts';
import { exec, many, maybeOne, one } from './sql.ts';
import { recordAuthorization } from './used-authorizations.ts';
import { reportCommitted } from './committed.ts';
import { ledgerKeys } from '../src/ledger/keys.ts';

/**
 * Redemptions: the payout of a PLC to its bearer. The double-spend guard is one transaction
 * under the PLC's row lock plus a partial unique index (one redemption in flight or settled per
 * PLC), so however many requests arrive, through whichever forks, one wins.
 */

export const redemptionStatuses = ['PENDING_PAYMENT', 'SETTLED', 'FAILED'] as const;
export type RedemptionStatus = (typeof redemptionStatuses)[number];

export const redemptionRow = z.object({
  id: z.string().uuid(),
  token_id: z.string().uuid(),
  bearer_pubkey: z.string(),
  bearer_owner_id: z.string(),
  issuer_owner_id: z.string(),
  amount_minor: z.bigint(),
  fee_minor: z.bigint(),
  currency: z.enum(['BRL', 'USD', 'EUR']),
  rail: z.enum(['pix', 'boleto']),
  destination: z.string(),
  destination_type: z.enum(payoutDestinationTypes),
  head_hash: z.string(),
  chain_length: z.number().int(),
  status: z.enum(redemptionStatuses),
  gateway_transfer_id: z.string().nullable(),
  gateway_status: z.string().nullable(),
  failure_reason: z.string().nullable(),
  request_tx_id: z.string().uuid(),
  settle_tx_id: z.string().uuid().nullable(),
  fail_tx_id: z.string().uuid().nullable(),
  device_id: z.string(),
  created_at: z.date(),
  updated_at: z.date(),
  finished_at: z.date().nullable(),
  payout_attempt: z.number().int(),
  payout_error: z.string().nullable(),
  payout_started_at: z.date().nullable(),
  fee_schedule_version: z.number().int().nullable(),
});
export type RedemptionRow = z.infer<typeof redemptionRow>;

const columns = `id, token_id, bearer_pubkey, bearer_owner_id, issuer_owner_id, amount_minor, fee_minor, currency, rail, destination,
  destination_type, head_hash, chain_length, status, gateway_transfer_id, gateway_status, failure_reason, request_tx_id,
  settle_tx_id, fail_tx_id, device_id, created_at, updated_at, finished_at, payout_attempt, payout_error, payout_started_at, fee_schedule_version`;
/** The columns `redemptionRow` parses, for the modules that read redemptions in their own statements. */
export const redemptionColumns = columns;

export function getRedemption(db: Queryable, id: string): Promise<RedemptionRow | null> {
  return maybeOne(db, redemptionRow, { name: 'redemption-get', text: `SELECT ${columns} FROM redemptions WHERE id = $1`, values: [id] });
}

export function getRedemptionByTransfer(db: Queryable, transferId: string): Promise<RedemptionRow | null> {
  return maybeOne(db, redemptionRow, {
    name: 'redemption-by-transfer',
    text: `SELECT ${columns} FROM redemptions WHERE gateway_transfer_id = $1`,
    values: [transferId],
  });
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The redemption a gateway transfer is about: the one that recorded the transfer's id, else the
 * one its `externalReference` names (our redemption id; a transfer event can overtake our own
 * record of the transfer id). Null when neither finds one.
 */
export async function findRedemptionForTransfer(db: Queryable, transferId: string, externalReference: string | null): Promise<RedemptionRow | null> {
  const byTransfer = await getRedemptionByTransfer(db, transferId);
  if (byTransfer !== null) return byTransfer;
  if (externalReference === null || !uuidPattern.test(externalReference)) return null;
  return getRedemption(db, externalReference.toLowerCase());
}

export function listRedemptions(
  db: Queryable,
  filter: { status?: RedemptionStatus | undefined; tokenId?: string | undefined },
  page: { limit: number; offset: number },
): Promise<RedemptionRow[]> {
  return many(db, redemptionRow, {
    name: 'redemption-list',
    text: `SELECT ${columns} FROM redemptions WHERE ($1::text IS NULL OR status = $1) AND ($4::uuid IS NULL OR token_id = $4)
            ORDER BY created_at DESC, id LIMIT $2 OFFSET $3`,
    values: [filter.status ?? null, page.limit, page.offset, filter.tokenId ?? null],
  });
}

export interface RedemptionRequest {
  redemptionId: string;
  tokenId: string;
  /** The bearer who signed the redeem authorisation. */
  bearerPubkey: string;
  /** The chain head the authorisation names. */
  headHash: string;
  /** The presented commitment's hash: must be the registered one (checked under the PLC's lock). */
  commitmentHash?: string | undefined;
  /** The payout rail (pix when absent: redemptions opened before boleto payouts). */
  rail?: PayoutRail | undefined;
  destination: string;
  destinationType: PayoutDestinationType;
  deviceId: string;
  feeMinor: bigint;
  /** The fee schedule version that priced the fee (services/fees.ts). */
  feeScheduleVersion?: number | undefined;
  /** Server time now and the expiry grace, for the "not expired" check. */
  nowMs: number;
  expiryGraceMs: number;
  /** The redeem authorisation, recorded as used in the opening's transaction (accepted once). */
  authorization?: { authorizationHash: string; signedAtMs: number } | undefined;
}

export type RedemptionRefusal =
  | { kind: 'fork'; plc: PlcRow; decision: Extract<RegistrationDecision, { kind: 'fork' }> }
  | { kind: 'stale_chain'; plc: PlcRow };

/**
 * The guarded transition that opens a redemption: registers any hops the presented chain adds,
 * requires the authorisation's key to be the bearer of that chain's head, then stores the
 * redemption, marks the PLC's redemption in flight and books issuer PROMISED -> bearer PENDING,
 * all in one transaction. A retry with the same redemption id answers the stored row. Refusals
 * throw DomainErrors; a fork or stale chain is returned to the caller (which raises the flag
 * outside this transaction, so the flag survives the refusal) before it throws.
 */
export async function openRedemption(
  pool: Pool,
  request: RedemptionRequest,
  decide: (plc: PlcRow, known: KnownRecord[]) => RegistrationDecision,
): Promise<{ redemption: RedemptionRow; created: boolean } | RedemptionRefusal> {
  try {
    return await withTransaction(pool, (client) => openInTransaction(client, request, decide));
  } catch (error) {
    if (isUniqueViolation(error, 'redemptions_one_live_per_plc')) {
      throw new DomainError('PLC_ALREADY_REDEEMED', 'this PLC is already redeemed or has a redemption in flight', {
        token_id: request.tokenId,
      });
    }
    // Migration 28: a new hop signed by a blocked key, or a blocked bearer. Nothing was written.
    throw keyBlockedError(error) ?? error;
  }
}

async function openInTransaction(
  client: PoolClient,
  request: RedemptionRequest,
  decide: (plc: PlcRow, known: KnownRecord[]) => RegistrationDecision,
): Promise<{ redemption: RedemptionRow; created: boolean } | RedemptionRefusal> {
  const existing = await getRedemption(client, request.redemptionId);
  if (existing !== null) {
    if (existing.token_id !== request.tokenId) throw new DomainError('CONFLICT', 'this redemption id belongs to another PLC');
    return { redemption: existing, created: false };
  }
  const plc = await maybeOne(client, plcRow, {
    name: 'redemption-lock-plc',
    text: `SELECT * FROM plcs WHERE token_id = $1 FOR UPDATE`,
    values: [request.tokenId],
  });
  if (plc === null) throw new DomainError('PLC_NOT_FOUND', 'no such PLC');
  if (request.commitmentHash !== undefined && plc.commitment_hash !== request.commitmentHash) {
    // services/commitment-binding.ts refused it before the workflow started; kept here, under
    // the lock, so that no path can open a redemption on a commitment other than the registered one.
    throw new DomainError('PLC_MISMATCH', 'this PLC is not the one registered under its token id', { token_id: plc.token_id, reason: 'foreign_commitment' });
  }
  if (plc.redemption_id === request.redemptionId) {
    // An earlier attempt of this same opening committed while this one waited for the PLC's lock
    // (its caller gave up on it: a local activity attempt timed out while PostgreSQL was frozen,
    // and its transaction went on). The redemption is open: answer it, as the check above would
    // have had it committed a moment sooner, before the authorisation (recorded by that attempt)
    // is taken for a replay. Found by the chaos campaign's PostgreSQL freeze.
    const opened = await getRedemption(client, request.redemptionId);
    if (opened !== null) return { redemption: opened, created: false };
  }
  // The fork check first (docs/protocol.md section 8): a fork is refused with its evidence even
  // when the PLC is being redeemed or is REDEEMED.
  const known = (await listTransfers(client, plc.token_id)).map(toKnownRecord);
  const decision = decide(plc, known);
  if (decision.kind === 'fork') return { kind: 'fork', plc, decision };
  if (request.authorization !== undefined) {
    // Accepted once: recorded in this transaction, which the PLC's row lock serialises with any
    // other opening of this PLC; undone with it if a check below refuses.
    const fresh = await recordAuthorization(client, {
      authorizationHash: request.authorization.authorizationHash,
      kind: 'redeem',
      signerPubkey: request.bearerPubkey,
      tokenId: request.tokenId,
      referenceId: request.redemptionId,
      signedAtMs: request.authorization.signedAtMs,
    });
    if (!fresh) {
      throw new DomainError('AUTHORIZATION_REPLAYED', 'this signed authorisation was accepted before: each is accepted once; sign a new one', {
        token_id: plc.token_id,
      });
    }
  }
  if (
    (plc.status === 'REDEEMED' || plc.redemption_id !== null) &&
    decision.kind === 'unchanged' &&
    (plc.head_hash !== request.headHash || plc.bearer_pubkey !== request.bearerPubkey)
  ) {
    // An earlier holder (a chain the registered one extends) signing over an older head: not the
    // bearer, whatever became of the PLC since (docs/protocol.md section 8: NOT_CURRENT_BEARER and
    // a DOUBLE_REDEMPTION_ATTEMPT flag, raised by the caller).
    return { kind: 'stale_chain', plc };
  }
  if (plc.status === 'REDEEMED' || plc.redemption_id !== null) {
    throw new DomainError('PLC_ALREADY_REDEEMED', 'this PLC is already redeemed or has a redemption in flight', {
      token_id: plc.token_id,
      status: plc.status,
    });
  }
  if (decision.kind === 'unrelated') throw new DomainError('PLC_MISMATCH', 'the presented chain does not continue the registered one');
  if (decision.kind === 'refuse') {
    throw new DomainError('PLC_NOT_REDEEMABLE', `a ${plc.status} PLC cannot be redeemed`, { status: plc.status });
  }
  let current = plc;
  if (decision.kind === 'extend') {
    // Hops presented with the redemption and never registered are appended by the one writer of
    // hops (appendTransfersBatch, as the transfer route's): a first hop queues TRANSFERRED for
    // the PLC's workflow in the same statement. The PLC's row is locked and was just read, so the
    // compare-and-set cannot lose here.
    const [head] = await appendTransfersBatch(client, [
      { read: { token_id: plc.token_id, status: plc.status, chain_length: plc.chain_length, head_hash: plc.head_hash }, decision, deviceId: request.deviceId },
    ]);
    if (head === null || head === undefined) throw new Error(`PLC ${plc.token_id} changed under its row lock while a redemption opened`);
    current = await one(client, plcRow, { name: 'redemption-plc-after-append', text: `SELECT * FROM plcs WHERE token_id = $1`, values: [plc.token_id] });
  }
  if (current.status !== 'TRANSFERRED') {
    throw new DomainError('PLC_NOT_REDEEMABLE', `a ${current.status} PLC cannot be redeemed (only a transferred one)`, {
      status: current.status,
    });
  }
  if (request.nowMs > Number(current.expires_at_ms) + request.expiryGraceMs) {
    throw new DomainError('PLC_EXPIRED', 'the PLC has expired', { expires_at: current.expires_at.toISOString() });
  }
  if (current.head_hash !== request.headHash || current.bearer_pubkey !== request.bearerPubkey) {
    // The signer is not the bearer of the PLC's current head: a former holder replaying an old state.
    return { kind: 'stale_chain', plc: current };
  }
  const posting = moneyModel.redeemRequested({
    issuerId: current.issuer_owner_id,
    bearerId: current.bearer_pubkey,
    currency: current.currency,
    amountMinor: current.amount_minor,
  });
  const booked = await bookFor(client, { type: 'redemption', id: request.redemptionId }, ledgerKeys.redemptionRequest.of(request.redemptionId), posting, `redemption of PLC ${current.token_id}`);
  const redemption = await one(client, redemptionRow, {
    name: 'redemption-insert',
    text: `INSERT INTO redemptions (id, token_id, bearer_pubkey, bearer_owner_id, issuer_owner_id, amount_minor, fee_minor, currency,
                                    rail, destination, destination_type, head_hash, chain_length, status, request_tx_id, device_id,
                                    fee_schedule_version)
           VALUES ($1, $2, $3, $3, $4, $5, $6, $7, $15, $8, $9, $10, $11, 'PENDING_PAYMENT', $12, $13, $14)
           RETURNING ${columns}`,
    values: [
      request.redemptionId,
      current.token_id,
      current.bearer_pubkey,
      current.issuer_owner_id,
      current.amount_minor.toString(),
      request.feeMinor.toString(),
      current.currency,
      request.destination,
      request.destinationType,
      current.head_hash,
      current.chain_length,
      booked.transactionId,
      request.deviceId,
      request.feeScheduleVersion ?? null,
      request.rail ?? 'pix',
    ],
  });
  await exec(client, {
    prepare: true,
    name: 'redemption-mark-plc',
    text: 'UPDATE plcs SET redemption_id = $2 WHERE token_id = $1',
    values: [current.token_id, request.redemptionId],
  });
  reportCommitted(client, { kind: 'redemption', outcome: 'opened' });
  return { redemption, created: true };
}

/** Records the gateway transfer of a redemption, once. */
export async function recordGatewayTransfer(db: Queryable, id: string, transferId: string, gatewayStatus: string): Promise<RedemptionRow> {
  const row = await maybeOne(db, redemptionRow, {
    name: 'redemption-record-transfer',
    text: `UPDATE redemptions SET gateway_transfer_id = coalesce(gateway_transfer_id, $2), gateway_status = $3, payout_error = NULL, updated_at = now()
            WHERE id = $1 AND (gateway_transfer_id IS NULL OR gateway_transfer_id = $2) RETURNING ${columns}`,
    values: [id, transferId, gatewayStatus],
  });
  if (row === null) throw new Error(`redemption ${id} already has another gateway transfer`);
  return row;
}

/** From the request (the row's creation) to its final state, for the metrics' histogram. */
function secondsToFinal(row: { created_at: Date; finished_at: Date | null }): number {
  return Math.max(0, ((row.finished_at ?? new Date()).getTime() - row.created_at.getTime()) / 1000);
}

export type FinishResult = { finished: boolean; redemption: RedemptionRow };

/**
 * Settles (payout done) or fails (payout refused) a redemption: one guarded UPDATE from
 * PENDING_PAYMENT plus its booking and the PLC's transition, in one transaction. A redemption
 * already final is answered as it is: a final status never moves backwards.
 */
export async function finishRedemption(
  pool: Pool,
  id: string,
  outcome: { status: 'SETTLED'; gatewayStatus: string } | { status: 'FAILED'; gatewayStatus: string | null; reason: string },
): Promise<FinishResult> {
  return withTransaction(pool, async (client) => {
    const current = await maybeOne(client, redemptionRow, {
      name: 'redemption-lock',
      text: `SELECT ${columns} FROM redemptions WHERE id = $1 FOR UPDATE`,
      values: [id],
    });
    if (current === null) throw new DomainError('NOT_FOUND', `no redemption ${id}`);
    if (current.status !== 'PENDING_PAYMENT') return { finished: false, redemption: current };
    if (outcome.status === 'SETTLED' && current.gateway_transfer_id === null) {
      // A redemption never settles without the id of the payout that paid it (docs/settlement.md,
      // "One payout per redemption"): the caller records it first (activities/redemption.ts).
      throw new Error(`redemption ${id} cannot settle without a recorded payout (gateway_transfer_id)`);
    }
    await exec(client, { prepare: true, name: 'redemption-lock-plc-finish', text: 'SELECT 1 FROM plcs WHERE token_id = $1 FOR UPDATE', values: [current.token_id] });
    if (outcome.status === 'SETTLED') {
      const posting = moneyModel.redeemSettled({
        bearerId: current.bearer_owner_id,
        currency: current.currency,
        amountMinor: current.amount_minor,
        feeMinor: current.fee_minor,
      });
      const booked = await bookFor(client, { type: 'redemption', id: id }, ledgerKeys.redemptionSettle.of(id), posting);
      const redemption = await one(client, redemptionRow, {
        name: 'redemption-settle',
        text: `UPDATE redemptions SET status = 'SETTLED', gateway_status = $2, settle_tx_id = $3, payout_error = NULL, updated_at = now(), finished_at = now()
                WHERE id = $1 RETURNING ${columns}`,
        values: [id, outcome.gatewayStatus, booked.transactionId],
      });
      await exec(client, {
        prepare: true,
        name: 'redemption-plc-redeemed',
        text: `UPDATE plcs SET status = 'REDEEMED', settlement_tx_id = $2, final_tx_id = $2, status_changed_at = now() WHERE token_id = $1`,
        values: [current.token_id, booked.transactionId],
      });
      reportCommitted(client, { kind: 'redemption', outcome: 'SETTLED', seconds: secondsToFinal(redemption) });
      reportCommitted(client, { kind: 'plc', event: 'redeemed', count: 1 });
      return { finished: true, redemption };
    }
    const posting = moneyModel.redeemFailed({
      issuerId: current.issuer_owner_id,
      bearerId: current.bearer_owner_id,
      currency: current.currency,
      amountMinor: current.amount_minor,
    });
    const booked = await bookFor(client, { type: 'redemption', id: id }, ledgerKeys.redemptionFail.of(id), posting);
    const redemption = await one(client, redemptionRow, {
      name: 'redemption-fail',
      text: `UPDATE redemptions SET status = 'FAILED', gateway_status = $2, failure_reason = $3, fail_tx_id = $4, payout_error = NULL, updated_at = now(),
                    finished_at = now()
              WHERE id = $1 RETURNING ${columns}`,
      values: [id, outcome.gatewayStatus, outcome.reason.slice(0, 500), booked.transactionId],
    });
    // The PLC goes back to TRANSFERRED (it never left it) and may be redeemed again.
    await exec(client, {
      prepare: true,
      name: 'redemption-plc-revert',
      text: 'UPDATE plcs SET redemption_id = NULL WHERE token_id = $1 AND redemption_id = $2',
      values: [current.token_id, id],
    });
    reportCommitted(client, { kind: 'redemption', outcome: 'FAILED', seconds: secondsToFinal(redemption) });
    return { finished: true, redemption };
  });
}

// ---------------------------------------------------------------------------------------------
// Payout attempts and operators' retries (migration 21_settlement_retries; docs/operations-console.md)
// ---------------------------------------------------------------------------------------------

/**
 * Records why the current payout attempt is stuck for a reason a retry can fix (null: clears
 * it), while the redemption waits for its payout.
 */
export async function notePayoutError(db: Queryable, id: string, error: string | null): Promise<void> {
  await exec(db, {
    prepare: true,
    name: 'redemption-payout-error',
    text: `UPDATE redemptions SET payout_error = $2, updated_at = now() WHERE id = $1 AND status = 'PENDING_PAYMENT'`,
    values: [id, error === null ? null : error.slice(0, 500)],
  });
}

/** Records a refusal of the current attempt's creation (`REFUSED:<code>`) and why a retry can fix it. */
export async function recordPayoutRefusal(db: Queryable, id: string, gatewayStatus: string, error: string): Promise<void> {
  await exec(db, {
    prepare: true,
    name: 'redemption-payout-refusal',
    text: `UPDATE redemptions SET gateway_status = $2, payout_error = $3, updated_at = now()
            WHERE id = $1 AND status = 'PENDING_PAYMENT' AND gateway_transfer_id IS NULL`,
    values: [id, gatewayStatus.slice(0, 100), error.slice(0, 500)],
  });
}

/**
 * Closes payout attempt `fromAttempt` (recording its key, transfer and why it ended) and makes
 * the next one current, with no transfer yet. Guarded: only from PENDING_PAYMENT and only from
 * the attempt the caller saw, so two retries racing start one new attempt; the loser gets the
 * row as it is.
 */
export async function startNextPayoutAttempt(
  pool: Pool,
  input: { redemptionId: string; fromAttempt: number; idempotencyKey: string; closedReason: string; retryId: string },
): Promise<{ started: boolean; redemption: RedemptionRow }> {
  return withTransaction(pool, async (client) => {
    const current = await one(client, redemptionRow, {
      name: 'redemption-lock-attempt',
      text: `SELECT ${columns} FROM redemptions WHERE id = $1 FOR UPDATE`,
      values: [input.redemptionId],
    });
    if (current.status !== 'PENDING_PAYMENT' || current.payout_attempt !== input.fromAttempt) return { started: false, redemption: current };
    await exec(client, {
      prepare: true,
      name: 'redemption-attempt-close',
      text: `INSERT INTO redemption_payout_attempts (redemption_id, attempt, idempotency_key, gateway_transfer_id, gateway_status, closed_reason, retry_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      values: [current.id, current.payout_attempt, input.idempotencyKey, current.gateway_transfer_id, current.gateway_status, input.closedReason.slice(0, 500), input.retryId],
    });
    const redemption = await one(client, redemptionRow, {
      name: 'redemption-attempt-next',
      text: `UPDATE redemptions SET payout_attempt = payout_attempt + 1, gateway_transfer_id = NULL, gateway_status = NULL, payout_error = NULL,
                    payout_started_at = now(), updated_at = now()
              WHERE id = $1 RETURNING ${columns}`,
      values: [current.id],
    });
    return { started: true, redemption };
  });
}

export const retryOutcomes = [
  'SETTLED',
  'FAILED',
  'NEW_ATTEMPT',
  'STILL_PENDING',
  'GATEWAY_UNAVAILABLE',
  'ALREADY_SETTLED',
  'ALREADY_FAILED',
  'REFUSED',
  'ERROR',
] as const;
export type RetryOutcome = (typeof retryOutcomes)[number];

const retryRow = z.object({
  id: z.string().uuid(),
  redemption_id: z.string().uuid(),
  requested_by: z.string(),
  reason: z.string(),
  requested_at: z.date(),
  outcome: z.enum(retryOutcomes).nullable(),
  detail: z.string().nullable(),
  attempt: z.number().int().nullable(),
  gateway_status: z.string().nullable(),
  finished_at: z.date().nullable(),
});
export type RetryRow = z.infer<typeof retryRow>;
const retryColumns = 'id, redemption_id, requested_by, reason, requested_at, outcome, detail, attempt, gateway_status, finished_at';

export function insertRetry(
  db: Queryable,
  retry: { id: string; redemptionId: string; requestedBy: string; requestedById: string | null; reason: string },
): Promise<RetryRow> {
  return one(db, retryRow, {
    name: 'redemption-retry-insert',
    text: `INSERT INTO redemption_retries (id, redemption_id, requested_by, requested_by_id, reason) VALUES ($1, $2, $3, $4, $5)
           RETURNING ${retryColumns}`,
    values: [retry.id, retry.redemptionId, retry.requestedBy.slice(0, 100), retry.requestedById, retry.reason],
  });
}

/** Records a retry's outcome once (a retried activity finds it recorded and leaves it). */
export async function finishRetry(
  db: Queryable,
  id: string,
  result: { outcome: RetryOutcome; detail: string; attempt: number | null; gatewayStatus: string | null },
): Promise<void> {
  await exec(db, {
    prepare: true,
    name: 'redemption-retry-finish',
    text: `UPDATE redemption_retries SET outcome = $2, detail = $3, attempt = $4, gateway_status = $5, finished_at = now()
            WHERE id = $1 AND outcome IS NULL`,
    values: [id, result.outcome, result.detail.slice(0, 1000), result.attempt, result.gatewayStatus?.slice(0, 100) ?? null],
  });
}

export function getRetry(db: Queryable, id: string): Promise<RetryRow | null> {
  return maybeOne(db, retryRow, { name: 'redemption-retry-get', text: `SELECT ${retryColumns} FROM redemption_retries WHERE id = $1`, values: [id] });
}

/** A redemption's retries, newest first (bounded). */
export function listRetries(db: Queryable, redemptionId: string, limit = 100): Promise<RetryRow[]> {
  return many(db, retryRow, {
    name: 'redemption-retry-list',
    text: `SELECT ${retryColumns} FROM redemption_retries WHERE redemption_id = $1 ORDER BY requested_at DESC, id LIMIT $2`,
    values: [redemptionId, limit],
  });
}

const attemptRow = z.object({
  attempt: z.number().int(),
  idempotency_key: z.string(),
  gateway_transfer_id: z.string().nullable(),
  gateway_status: z.string().nullable(),
  closed_reason: z.string(),
  retry_id: z.string().uuid(),
  closed_at: z.date(),
});
export type PayoutAttemptRow = z.infer<typeof attemptRow>;

/** A redemption's closed payout attempts, oldest first (at most 50 by the CHECK). */
export function listPayoutAttempts(db: Queryable, redemptionId: string): Promise<PayoutAttemptRow[]> {
  return many(db, attemptRow, {
    name: 'redemption-attempt-list',
    text: `SELECT attempt, idempotency_key, gateway_transfer_id, gateway_status, closed_reason, retry_id, closed_at
             FROM redemption_payout_attempts WHERE redemption_id = $1 ORDER BY attempt`,
    values: [redemptionId],
  });
}

/** Redemptions waiting for their payout and the oldest one's age (the metrics' gauges; docs/operations.md). */
export function pendingPaymentStats(db: Queryable): Promise<{ count: number; oldest_ms: number | null }> {
  return one(db, z.object({ count: z.number().int(), oldest_ms: z.number().nullable() }), {
    name: 'redemption-pending-stats',
    text: `SELECT count(*)::int AS count, (extract(epoch FROM now() - min(created_at)) * 1000)::float8 AS oldest_ms
             FROM redemptions WHERE status = 'PENDING_PAYMENT'`,
  });
}
