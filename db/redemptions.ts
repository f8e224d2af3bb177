import { z } from 'zod';
import { DomainError } from '../src/errors.ts';
import { moneyModel } from '../src/ledger/money-model.ts';
import type { KnownRecord, RegistrationDecision } from '../src/plc/register-transfers.ts';
import { postTransaction } from './ledger.ts';
import { insertTransferRecords, isUniqueViolation, listTransfers, plcRow, toKnownRecord, type PlcRow } from './plcs.ts';
import { withTransaction, type Pool, type PoolClient, type Queryable } from './pool.ts';
import { many, maybeOne, one } from './sql.ts';

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
  rail: z.literal('pix'),
  destination: z.string(),
  destination_type: z.enum(['CPF', 'CNPJ', 'EMAIL', 'PHONE', 'EVP']),
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
});
export type RedemptionRow = z.infer<typeof redemptionRow>;

const columns = `id, token_id, bearer_pubkey, bearer_owner_id, issuer_owner_id, amount_minor, fee_minor, currency, rail, destination,
  destination_type, head_hash, chain_length, status, gateway_transfer_id, gateway_status, failure_reason, request_tx_id,
  settle_tx_id, fail_tx_id, device_id, created_at, updated_at, finished_at`;

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

export function listRedemptions(
  db: Queryable,
  filter: { status?: RedemptionStatus | undefined },
  page: { limit: number; offset: number },
): Promise<RedemptionRow[]> {
  return many(db, redemptionRow, {
    name: 'redemption-list',
    text: `SELECT ${columns} FROM redemptions WHERE ($1::text IS NULL OR status = $1)
            ORDER BY created_at DESC, id LIMIT $2 OFFSET $3`,
    values: [filter.status ?? null, page.limit, page.offset],
  });
}

export interface RedemptionRequest {
  redemptionId: string;
  tokenId: string;
  /** The bearer who signed the redeem authorisation. */
  bearerPubkey: string;
  /** The chain head the authorisation names. */
  headHash: string;
  destination: string;
  destinationType: 'CPF' | 'CNPJ' | 'EMAIL' | 'PHONE' | 'EVP';
  deviceId: string;
  feeMinor: bigint;
  /** Server time now and the expiry grace, for the "not expired" check. */
  nowMs: number;
  expiryGraceMs: number;
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
    throw error;
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
  if (plc.status === 'REDEEMED' || plc.redemption_id !== null) {
    throw new DomainError('PLC_ALREADY_REDEEMED', 'this PLC is already redeemed or has a redemption in flight', {
      token_id: plc.token_id,
      redemption_id: plc.redemption_id,
      status: plc.status,
    });
  }
  const known = (await listTransfers(client, plc.token_id)).map(toKnownRecord);
  const decision = decide(plc, known);
  if (decision.kind === 'fork') return { kind: 'fork', plc, decision };
  if (decision.kind === 'unrelated') throw new DomainError('PLC_MISMATCH', 'the presented chain does not continue the registered one');
  if (decision.kind === 'refuse') {
    throw new DomainError('PLC_NOT_REDEEMABLE', `a ${plc.status} PLC cannot be redeemed`, { status: plc.status });
  }
  let current = plc;
  if (decision.kind === 'extend') {
    await insertTransferRecords(client, plc.token_id, decision.records, request.deviceId);
    current = await one(client, plcRow, {
      name: 'redemption-advance-plc',
      text: `UPDATE plcs SET status = 'TRANSFERRED', chain_length = $2, head_hash = $3, bearer_pubkey = $4,
                    status_changed_at = CASE WHEN status = 'TRANSFERRED' THEN status_changed_at ELSE now() END
              WHERE token_id = $1 RETURNING *`,
      values: [plc.token_id, decision.chainLength, decision.headHash, decision.bearerPubkey],
    });
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
  const booked = await postTransaction(client, {
    idempotencyKey: `redemption:${request.redemptionId}:request`,
    txType: posting.txType,
    referenceType: 'redemption',
    referenceId: request.redemptionId,
    description: `redemption of PLC ${current.token_id}`,
    entries: posting.entries,
    // The promise was made before any freeze; the bearer is owed it.
    allowFrozen: true,
  });
  const redemption = await one(client, redemptionRow, {
    name: 'redemption-insert',
    text: `INSERT INTO redemptions (id, token_id, bearer_pubkey, bearer_owner_id, issuer_owner_id, amount_minor, fee_minor, currency,
                                    rail, destination, destination_type, head_hash, chain_length, status, request_tx_id, device_id)
           VALUES ($1, $2, $3, $3, $4, $5, $6, $7, 'pix', $8, $9, $10, $11, 'PENDING_PAYMENT', $12, $13)
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
    ],
  });
  await client.query({
    name: 'redemption-mark-plc',
    text: 'UPDATE plcs SET redemption_id = $2 WHERE token_id = $1',
    values: [current.token_id, request.redemptionId],
  });
  return { redemption, created: true };
}

/** Records the gateway transfer of a redemption, once. */
export async function recordGatewayTransfer(db: Queryable, id: string, transferId: string, gatewayStatus: string): Promise<RedemptionRow> {
  const row = await maybeOne(db, redemptionRow, {
    name: 'redemption-record-transfer',
    text: `UPDATE redemptions SET gateway_transfer_id = coalesce(gateway_transfer_id, $2), gateway_status = $3, updated_at = now()
            WHERE id = $1 AND (gateway_transfer_id IS NULL OR gateway_transfer_id = $2) RETURNING ${columns}`,
    values: [id, transferId, gatewayStatus],
  });
  if (row === null) throw new Error(`redemption ${id} already has another gateway transfer`);
  return row;
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
    await client.query({ name: 'redemption-lock-plc-finish', text: 'SELECT 1 FROM plcs WHERE token_id = $1 FOR UPDATE', values: [current.token_id] });
    if (outcome.status === 'SETTLED') {
      const posting = moneyModel.redeemSettled({
        bearerId: current.bearer_owner_id,
        currency: current.currency,
        amountMinor: current.amount_minor,
        feeMinor: current.fee_minor,
      });
      const booked = await postTransaction(client, {
        idempotencyKey: `redemption:${id}:settle`,
        txType: posting.txType,
        referenceType: 'redemption',
        referenceId: id,
        entries: posting.entries,
        allowFrozen: true,
      });
      const redemption = await one(client, redemptionRow, {
        name: 'redemption-settle',
        text: `UPDATE redemptions SET status = 'SETTLED', gateway_status = $2, settle_tx_id = $3, updated_at = now(), finished_at = now()
                WHERE id = $1 RETURNING ${columns}`,
        values: [id, outcome.gatewayStatus, booked.transactionId],
      });
      await client.query({
        name: 'redemption-plc-redeemed',
        text: `UPDATE plcs SET status = 'REDEEMED', settlement_tx_id = $2, final_tx_id = $2, status_changed_at = now() WHERE token_id = $1`,
        values: [current.token_id, booked.transactionId],
      });
      return { finished: true, redemption };
    }
    const posting = moneyModel.redeemFailed({
      issuerId: current.issuer_owner_id,
      bearerId: current.bearer_owner_id,
      currency: current.currency,
      amountMinor: current.amount_minor,
    });
    const booked = await postTransaction(client, {
      idempotencyKey: `redemption:${id}:fail`,
      txType: posting.txType,
      referenceType: 'redemption',
      referenceId: id,
      entries: posting.entries,
      allowFrozen: true,
    });
    const redemption = await one(client, redemptionRow, {
      name: 'redemption-fail',
      text: `UPDATE redemptions SET status = 'FAILED', gateway_status = $2, failure_reason = $3, fail_tx_id = $4, updated_at = now(),
                    finished_at = now()
              WHERE id = $1 RETURNING ${columns}`,
      values: [id, outcome.gatewayStatus, outcome.reason.slice(0, 500), booked.transactionId],
    });
    // The PLC goes back to TRANSFERRED (it never left it) and may be redeemed again.
    await client.query({
      name: 'redemption-plc-revert',
      text: 'UPDATE plcs SET redemption_id = NULL WHERE token_id = $1 AND redemption_id = $2',
      values: [current.token_id, id],
    });
    return { finished: true, redemption };
  });
}
