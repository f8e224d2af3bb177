import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { gatewayIdempotencyKey, isGatewayError, type GatewayBillPayment, type GatewayClient, type GatewayTransfer } from '../gateway/index.ts';
import { closedPayoutIds, recordFoundPayout, recordPayoutIntent } from '../db/payout-intents.ts';
import { isTransientPayoutRefusal, payoutOutcome, payoutRefusalPrefix } from '../gateway/status.ts';
import type { Pool } from '../db/pool.ts';
import {
  finishRedemption,
  finishRetry,
  getRedemption,
  notePayoutError,
  openRedemption,
  recordGatewayTransfer,
  recordPayoutRefusal,
  startNextPayoutAttempt,
  type RedemptionRow,
  type RetryOutcome,
} from '../db/redemptions.ts';
import { decideRetry, payoutIdempotencyKey, type PayoutProbe } from '../src/settlement/retry.ts';
import { raiseRiskFlag } from '../db/risk-flags.ts';
import { DomainError } from '../src/errors.ts';
import { forkFindingOf } from '../src/plc/fork-check.ts';
import { decideRegistration, toTransferRecord, type KnownRecord } from '../src/plc/register-transfers.ts';
import { refuseFork } from '../services/fork-check.ts';
import { readRedemptionTransfer } from '../services/reconcile-gateway.ts';
import { plcRedemptionFinishedSignal } from '../workflows/plc-messages.ts';
import { hasOwnWorkflow } from '../db/plc-expiry.ts';
import { refusalsAsFailures } from './failures.ts';
import type { PayoutDestinationType, PayoutRail } from '../src/settlement/payout-destination.ts';

/**
 * The redemption workflow's activities: open (the double-spend guard and issuer PROMISED ->
 * bearer PENDING), the gateway payout (idempotent by the redemption id), reading the payout's
 * status, and finishing (settle or fail, each with its booking).
 */

export interface OpenRedemptionInput {
  redemptionId: string;
  tokenId: string;
  bearerPubkey: string;
  headHash: string;
  /**
   * The presented commitment's hash, checked against the registered one under the PLC's lock
   * (services/commitment-binding.ts checked it before); absent in redemptions opened before the check.
   */
  commitmentHash?: string;
  /** The payout rail; absent (pix) in redemptions opened before boleto payouts. */
  rail?: PayoutRail;
  /** A Pix key, or a boleto's digitable line (digits only). */
  destination: string;
  destinationType: PayoutDestinationType;
  deviceId: string;
  feeMinor: string;
  /** The fee schedule version that priced `feeMinor` (docs/limits-and-fees.md); absent before fees had versions. */
  feeScheduleVersion?: number;
  /** The presented chain (already verified by the API), as hex records. */
  presented: KnownRecord[];
  expiryGraceMs: number;
  /**
   * The redeem authorisation's hash (docs/protocol.md 9.4), recorded with the redemption so that it
   * is accepted once; absent in redemptions opened before it was recorded.
   */
  authorizationHash?: string;
  signedAtMs?: number;
}

export interface RedemptionState {
  redemptionId: string;
  tokenId: string;
  status: 'PENDING_PAYMENT' | 'SETTLED' | 'FAILED';
  amountMinor: string;
  feeMinor: string;
  currency: string;
  bearerPubkey: string;
  gatewayTransferId: string | null;
  gatewayStatus: string | null;
  failureReason: string | null;
  requestTxId: string;
  settleTxId: string | null;
  /** The current payout attempt (1 unless an operator's retry started another). */
  payoutAttempt?: number;
}

export function toRedemptionState(row: RedemptionRow): RedemptionState {
  return {
    redemptionId: row.id,
    tokenId: row.token_id,
    status: row.status,
    amountMinor: row.amount_minor.toString(),
    feeMinor: row.fee_minor.toString(),
    currency: row.currency,
    bearerPubkey: row.bearer_pubkey,
    gatewayTransferId: row.gateway_transfer_id,
    gatewayStatus: row.gateway_status,
    failureReason: row.failure_reason,
    requestTxId: row.request_tx_id,
    settleTxId: row.settle_tx_id,
    payoutAttempt: row.payout_attempt,
  };
}

export type PayoutStatus = { final: false; gatewayStatus: string } | { final: true; done: boolean; gatewayStatus: string; failReason: string | null };

function classifyTransfer(status: string, failReason: string | null): PayoutStatus {
  const outcome = payoutOutcome(status);
  if (outcome === 'paid') return { final: true, done: true, gatewayStatus: status, failReason: null };
  if (outcome === 'failed') return { final: true, done: false, gatewayStatus: status, failReason: failReason ?? status };
  return { final: false, gatewayStatus: status };
}

/** An operator's retry, as the workflow hands it to `retryPayout`. */
export interface RetryPayoutInput {
  redemptionId: string;
  retryId: string;
}

export interface RetryPayoutResult {
  retryId: string;
  outcome: RetryOutcome;
  detail: string;
  /** The payout attempt current after the retry. */
  attempt: number;
  transferId: string | null;
  gatewayStatus: string | null;
  /** A final answer for the workflow to book (SETTLED or FAILED), or null. */
  final: Extract<PayoutStatus, { final: true }> | null;
  /** The attempt is stuck for a reason a retry can fix (e.g. refused again); null otherwise. */
  problem: string | null;
  /** The transfer of the attempt this retry closed: its late events must not move the redemption. */
  closedTransferId: string | null;
}

export interface FinishRedemptionInput {
  redemptionId: string;
  done: boolean;
  gatewayStatus: string;
  failReason: string | null;
}

/** A payout of either rail, as the adapter reads it. */
type Payout = GatewayTransfer | GatewayBillPayment;

/** Pages of 100 read when the gateway is asked what it holds under a redemption's reference. */
const payoutListPageSize = 100;
const payoutListPagesMax = 5;

/** Where a payout goes: a transfer's Pix key, a bill payment's digitable line (digits). */
function destinationOf(payout: Payout): string | null {
  return 'identificationField' in payout ? payout.identificationField : payout.pixAddressKey;
}

export function createRedemptionActivities(deps: { pool: Pool; gateway: GatewayClient; temporal: Pick<Client, 'workflow'> }) {
  const { pool, gateway, temporal } = deps;

  async function finish(input: FinishRedemptionInput): Promise<RedemptionState> {
    if (input.done) await requirePayoutRecorded(input.redemptionId);
    const result = await finishRedemption(
      pool,
      input.redemptionId,
      input.done
        ? { status: 'SETTLED', gatewayStatus: input.gatewayStatus }
        : { status: 'FAILED', gatewayStatus: input.gatewayStatus, reason: input.failReason ?? 'payout failed' },
    );
    return toRedemptionState(result.redemption);
  }

  /**
   * Creates the current attempt's payout by the redemption's rail: a Pix transfer to the key, or
   * the payment of the boleto (a bill payment), with the redemption id as its `externalReference`.
   * Both answer in one status vocabulary (PENDING, BANK_PROCESSING, DONE, FAILED, CANCELLED), so
   * everything after this is the same for both. Never called without `findOrCreatePayout`'s look
   * at the gateway first: a create is not idempotent.
   */
  async function createTransfer(row: RedemptionRow): Promise<Payout> {
    const amountMinor = row.amount_minor - row.fee_minor;
    if (row.rail === 'boleto') {
      return gateway.createBillPayment({
        amountMinor,
        identificationField: row.destination,
        description: `PLC ${row.token_id}`,
        externalReference: row.id,
      });
    }
    if (row.destination_type === 'BANK_SLIP' || row.destination_type === 'COLLECTION') {
      throw ApplicationFailure.nonRetryable(`redemption ${row.id} is pix with a boleto destination`, 'INVALID_ROW');
    }
    return gateway.createTransfer({
      amountMinor,
      pixAddressKey: row.destination,
      pixAddressKeyType: row.destination_type,
      description: `PLC ${row.token_id}`,
      externalReference: row.id,
    });
  }

  /** Reads the payout back by the redemption's rail; a status the adapter does not know is flagged (and stays open). */
  async function readPayout(row: RedemptionRow, payoutId: string): Promise<Payout> {
    const payout = row.rail === 'boleto' ? await gateway.getBillPayment(payoutId) : await gateway.getTransfer(payoutId);
    await flagUnknownStatus(row, payout);
    return payout;
  }

  /** A payout status outside Asaas's documented vocabulary: open (never final), and a person looks (once per payout and status). */
  async function flagUnknownStatus(row: RedemptionRow, payout: Payout): Promise<void> {
    if (payout.status !== 'UNKNOWN') return;
    await raiseRiskFlag(pool, {
      flagType: 'GATEWAY_AUDIT_MISMATCH',
      severity: 'medium',
      subjectPubkey: null,
      tokenId: row.token_id,
      dedupeKey: `unknown-gateway-status:${payout.id}:${payout.gatewayStatus.slice(0, 100)}`,
      details: {
        kind: 'unknown_gateway_status',
        redemption_id: row.id,
        payout_id: payout.id,
        gateway_status: payout.gatewayStatus.slice(0, 100),
        meaning: 'a status the adapter does not know: read as open (UNKNOWN), the redemption keeps waiting',
      },
    });
  }

  /**
   * The payouts the gateway holds under the redemption's reference (its id, sent as the payout's
   * `externalReference`), oldest first, a bounded number of pages.
   */
  async function payoutsNaming(row: RedemptionRow): Promise<Payout[]> {
    const found: Payout[] = [];
    for (let page = 0; page < payoutListPagesMax; page += 1) {
      const query = { externalReference: row.id, limit: payoutListPageSize, offset: page * payoutListPageSize };
      const listed = row.rail === 'boleto' ? await gateway.listBillPayments(query) : await gateway.listTransfers(query);
      found.push(...listed.items);
      if (!listed.hasMore) break;
    }
    return found;
  }

  /**
   * A payout the gateway already holds for this attempt: one that names the redemption, pays its
   * amount to its destination, is not failed, and was not closed by an earlier attempt; the one
   * the validation claimed first, else the oldest. Null when there is none.
   */
  async function adoptablePayout(row: RedemptionRow, claimedPayoutId: string | null, wanted: 'open' | 'paid'): Promise<Payout | null> {
    const amountMinor = row.amount_minor - row.fee_minor;
    const closed = await closedPayoutIds(pool, row.id);
    const candidates = (await payoutsNaming(row)).filter(
      (payout) =>
        !closed.has(payout.id) &&
        payout.externalReference === row.id &&
        payout.amountMinor === amountMinor &&
        destinationOf(payout) === row.destination &&
        (wanted === 'paid' ? payoutOutcome(payout.status) === 'paid' : payoutOutcome(payout.status) !== 'failed'),
    );
    return candidates.find((payout) => payout.id === claimedPayoutId) ?? candidates[0] ?? null;
  }

  /**
   * The current attempt's payout, made once (docs/settlement.md, "One payout per redemption"):
   * the intent (redemption, attempt) is recorded first; then the gateway is asked what it holds
   * under the redemption's reference, and only when it holds nothing for this attempt is a payout
   * created. An answer lost on the way back is thus recovered by the next run of the activity,
   * which finds the payout instead of creating a second one: no reliance on an Idempotency-Key
   * Asaas does not document. The payout recorded is the one the row names after the write: when
   * the gateway's validation claimed another one first, that one.
   */
  async function findOrCreatePayout(row: RedemptionRow): Promise<Payout> {
    const { intent } = await recordPayoutIntent(pool, {
      redemptionId: row.id,
      attempt: row.payout_attempt,
      rail: row.rail,
      amountMinor: row.amount_minor - row.fee_minor,
      destination: row.destination,
    });
    const payout = (await adoptablePayout(row, intent.claimed_payout_id, 'open')) ?? (await createTransfer(row));
    await flagUnknownStatus(row, payout);
    const recorded = await recordFoundPayout(pool, row.id, payout.id, payout.status);
    if (recorded.gateway_transfer_id === null || recorded.gateway_transfer_id === payout.id) return payout;
    return readPayout(recorded, recorded.gateway_transfer_id);
  }

  /** The gateway's word on the row's current attempt, creating its transfer under its own key when none was ever answered. */
  async function probe(row: RedemptionRow): Promise<PayoutProbe> {
    try {
      if (row.gateway_transfer_id !== null) {
        const read = await readRedemptionTransfer(gateway, row.gateway_transfer_id, row.rail);
        if (read.problem !== null) return { kind: 'unavailable', message: read.problem };
        return { kind: 'transfer', transferId: row.gateway_transfer_id, status: read.status, failReason: read.failReason };
      }
      if (row.gateway_status !== null && row.gateway_status.startsWith(payoutRefusalPrefix)) {
        const recorded = row.payout_error ?? row.gateway_status;
        const message = recorded.startsWith(`${row.gateway_status}: `) ? recorded.slice(row.gateway_status.length + 2) : recorded;
        return { kind: 'refused', gatewayStatus: row.gateway_status, message };
      }
      // No answer was ever recorded: the gateway is asked what it holds under the redemption's
      // reference (a transfer whose answer was lost), and only then is one created.
      const transfer = await findOrCreatePayout(row);
      return { kind: 'transfer', transferId: transfer.id, status: transfer.status, failReason: transfer.failReason };
    } catch (error) {
      if (isGatewayError(error) && !error.retryable) {
        const gatewayStatus = `${payoutRefusalPrefix}${error.code}`;
        const message = error.message.slice(0, 300);
        if (isTransientPayoutRefusal(gatewayStatus)) await recordPayoutRefusal(pool, row.id, gatewayStatus, `${gatewayStatus}: ${message}`);
        return { kind: 'refused', gatewayStatus, message };
      }
      if (isGatewayError(error)) return { kind: 'unavailable', message: `${error.code}: ${error.message}`.slice(0, 300) };
      throw error;
    }
  }

  async function retry(row: RedemptionRow, retryId: string): Promise<RetryPayoutResult> {
    const base = { retryId, attempt: row.payout_attempt, transferId: row.gateway_transfer_id, gatewayStatus: row.gateway_status, problem: null, closedTransferId: null };
    if (row.status !== 'PENDING_PAYMENT') {
      const done = row.status === 'SETTLED';
      return {
        ...base,
        outcome: done ? 'ALREADY_SETTLED' : 'ALREADY_FAILED',
        detail: `the redemption is already ${row.status}`,
        final: { final: true, done, gatewayStatus: row.gateway_status ?? row.status, failReason: row.failure_reason },
      };
    }
    const found = await probe(row);
    const decision = decideRetry(found, isTransientPayoutRefusal);
    const transferId = found.kind === 'transfer' ? found.transferId : row.gateway_transfer_id;
    switch (decision.action) {
      case 'SETTLE':
        return {
          ...base,
          transferId,
          gatewayStatus: decision.gatewayStatus,
          outcome: 'SETTLED',
          detail: `the gateway says transfer ${transferId ?? '?'} is ${decision.gatewayStatus}: the workflow books the settlement`,
          final: { final: true, done: true, gatewayStatus: decision.gatewayStatus, failReason: null },
        };
      case 'FAIL':
        return {
          ...base,
          transferId,
          gatewayStatus: decision.gatewayStatus,
          outcome: 'FAILED',
          detail: `final at the gateway (${decision.gatewayStatus}: ${decision.reason}): the workflow books the failure and reverts the PLC`,
          final: { final: true, done: false, gatewayStatus: decision.gatewayStatus, failReason: decision.reason },
        };
      case 'STILL_PENDING':
        return {
          ...base,
          transferId,
          gatewayStatus: decision.gatewayStatus,
          outcome: 'STILL_PENDING',
          detail: `transfer ${transferId ?? '?'} is still ${decision.gatewayStatus} at the gateway: no second transfer beside it; the workflow keeps asking`,
          final: null,
        };
      case 'GATEWAY_UNAVAILABLE':
        return { ...base, outcome: 'GATEWAY_UNAVAILABLE', detail: `the gateway did not answer: ${decision.reason}; nothing changed`, final: null, problem: row.payout_error };
      case 'NEW_ATTEMPT': {
        const closedKey = gatewayIdempotencyKey(row.rail === 'boleto' ? 'bill' : 'transfer', payoutIdempotencyKey(row.id, row.payout_attempt));
        const next = await startNextPayoutAttempt(pool, {
          redemptionId: row.id,
          fromAttempt: row.payout_attempt,
          idempotencyKey: closedKey,
          closedReason: decision.reason,
          retryId,
        });
        if (!next.started) {
          return { ...base, outcome: 'STILL_PENDING', detail: 'another retry started a new attempt first', final: null, attempt: next.redemption.payout_attempt };
        }
        const started = await probe(next.redemption);
        const after = { ...base, attempt: next.redemption.payout_attempt, closedTransferId: row.gateway_transfer_id };
        if (started.kind === 'transfer') {
          const status = classifyTransfer(started.status, started.failReason);
          return {
            ...after,
            transferId: started.transferId,
            gatewayStatus: started.status,
            outcome: 'NEW_ATTEMPT',
            detail: `attempt ${row.payout_attempt} closed (${decision.reason}); attempt ${next.redemption.payout_attempt} created transfer ${started.transferId} (${started.status})`,
            final: status.final ? status : null,
          };
        }
        const problem = started.kind === 'refused' ? `${started.gatewayStatus}: ${started.message}` : started.message;
        return {
          ...after,
          transferId: null,
          gatewayStatus: started.kind === 'refused' ? started.gatewayStatus : null,
          outcome: 'NEW_ATTEMPT',
          detail: `attempt ${row.payout_attempt} closed (${decision.reason}); attempt ${next.redemption.payout_attempt} is stuck too: ${problem}`,
          final: started.kind === 'refused' && !isTransientPayoutRefusal(started.gatewayStatus)
            ? { final: true, done: false, gatewayStatus: started.gatewayStatus, failReason: started.message }
            : null,
          problem,
        };
      }
    }
  }

  /**
   * A redemption settles only with the id of the payout that paid it. When the row names none (the
   * creation's answer was lost and the paid event came first), the gateway is asked for the paid
   * payout under the redemption's reference, which is recorded; without one the settlement waits
   * (a retryable failure: the activity asks again).
   */
  async function requirePayoutRecorded(redemptionId: string): Promise<void> {
    const row = await getRedemption(pool, redemptionId);
    if (row === null || row.status !== 'PENDING_PAYMENT' || row.gateway_transfer_id !== null) return;
    const paid = await adoptablePayout(row, null, 'paid');
    if (paid === null) {
      throw ApplicationFailure.retryable(`redemption ${redemptionId} has no recorded payout and the gateway holds no paid one under its reference yet`, 'PAYOUT_NOT_RECORDED');
    }
    await recordFoundPayout(pool, row.id, paid.id, paid.status);
  }

  async function load(redemptionId: string): Promise<RedemptionRow> {
    const row = await getRedemption(pool, redemptionId);
    if (row === null) throw ApplicationFailure.nonRetryable(`no redemption ${redemptionId}`, 'NOT_FOUND');
    return row;
  }

  return {
    async openRedemption(input: OpenRedemptionInput): Promise<{ created: boolean; state: RedemptionState }> {
      return refusalsAsFailures(async () => {
        const presented = input.presented.map(toTransferRecord);
        const result = await openRedemption(
          pool,
          {
            redemptionId: input.redemptionId,
            tokenId: input.tokenId,
            bearerPubkey: input.bearerPubkey,
            headHash: input.headHash,
            commitmentHash: input.commitmentHash,
            rail: input.rail,
            destination: input.destination,
            destinationType: input.destinationType,
            deviceId: input.deviceId,
            feeMinor: BigInt(input.feeMinor),
            feeScheduleVersion: input.feeScheduleVersion,
            nowMs: Date.now(),
            expiryGraceMs: input.expiryGraceMs,
            authorization:
              input.authorizationHash === undefined ? undefined : { authorizationHash: input.authorizationHash, signedAtMs: input.signedAtMs ?? 0 },
          },
          (plc, known) => decideRegistration({ status: plc.status, redemptionInFlight: plc.redemption_id !== null }, known, presented),
        );
        if ('redemption' in result) return { created: result.created, state: toRedemptionState(result.redemption) };
        if (result.kind === 'fork') {
          // The registered chain moved after the API's fork check: the same refusal and flag.
          await refuseFork(pool, forkFindingOf(input.tokenId, result.decision), { route: 'redeem', deviceId: input.deviceId });
        }
        const flag = await raiseRiskFlag(pool, {
          flagType: 'DOUBLE_REDEMPTION_ATTEMPT',
          severity: 'medium',
          subjectPubkey: input.bearerPubkey,
          tokenId: input.tokenId,
          dedupeKey: `stale-redeem:${input.tokenId}:${input.bearerPubkey}:${input.headHash}`,
          details: { presented_head_hash: input.headHash, current_head_hash: result.plc.head_hash },
        });
        throw new DomainError('NOT_CURRENT_BEARER', 'the signer is not the bearer of the PLC current chain head', {
          token_id: input.tokenId,
          current_head_hash: result.plc.head_hash,
          risk_flag_id: flag.id,
        });
      });
    },

    async loadRedemption(input: { redemptionId: string }): Promise<RedemptionState | null> {
      const row = await getRedemption(pool, input.redemptionId);
      return row === null ? null : toRedemptionState(row);
    },

    /**
     * Creates the payout of the current attempt at the gateway (a Pix transfer, or a bill payment
     * for a boleto redemption: the rail is chosen here, so the workflow code is the same for both), or finds the one already
     * created (same idempotency key). A refusal is recorded on the row (`REFUSED:<code>`), with the
     * reason when a retry can fix it.
     */
    async createPayout(input: { redemptionId: string }): Promise<{ transferId: string | null; status: PayoutStatus }> {
      const row = await load(input.redemptionId);
      if (row.status !== 'PENDING_PAYMENT') {
        return {
          transferId: row.gateway_transfer_id,
          status: { final: true, done: row.status === 'SETTLED', gatewayStatus: row.gateway_status ?? row.status, failReason: row.failure_reason },
        };
      }
      try {
        const transfer = row.gateway_transfer_id === null ? await findOrCreatePayout(row) : await readPayout(row, row.gateway_transfer_id);
        if (row.gateway_transfer_id !== null) await recordGatewayTransfer(pool, row.id, transfer.id, transfer.status);
        return { transferId: transfer.id, status: classifyTransfer(transfer.status, transfer.failReason) };
      } catch (error) {
        if (isGatewayError(error) && !error.retryable) {
          // A refusal by the gateway (an invalid key, a validation error, the platform's balance):
          // nothing was created. The workflow decides whether it is final (isTransientPayoutRefusal).
          const gatewayStatus = `${payoutRefusalPrefix}${error.code}`;
          const failReason = error.message.slice(0, 300);
          if (isTransientPayoutRefusal(gatewayStatus)) await recordPayoutRefusal(pool, row.id, gatewayStatus, `${gatewayStatus}: ${failReason}`);
          return { transferId: null, status: { final: true, done: false, gatewayStatus, failReason } };
        }
        throw error;
      }
    },

    /** Records why the payout is stuck (the gateway unreachable through every attempt of createPayout). */
    async notePayoutProblem(input: { redemptionId: string; problem: string }): Promise<void> {
      await notePayoutError(pool, input.redemptionId, input.problem);
    },

    /**
     * An operator's retry (docs/operations-console.md, "Retrying a settlement"), run by the
     * redemption's own workflow, one at a time: asks the gateway for the current attempt's real
     * status (as the pending-transfers tool does, `readRedemptionTransfer`); a final status is
     * handed back for the workflow to book; an attempt known dead for a transient cause is closed
     * and a new one started under a new idempotency key; a transfer still in process is left to
     * finish (never a second one beside it). Records the outcome on the retry's row.
     */
    async retryPayout(input: RetryPayoutInput): Promise<RetryPayoutResult> {
      const row = await load(input.redemptionId);
      const result = await retry(row, input.retryId);
      await finishRetry(pool, input.retryId, { outcome: result.outcome, detail: result.detail, attempt: result.attempt, gatewayStatus: result.gatewayStatus });
      return result;
    },

    /** Asks the gateway for the payout's status (the fallback when no webhook came in time). */
    async readPayoutStatus(input: { redemptionId: string }): Promise<PayoutStatus> {
      const row = await load(input.redemptionId);
      if (row.gateway_transfer_id === null) return { final: false, gatewayStatus: 'NOT_CREATED' };
      const transfer = await readPayout(row, row.gateway_transfer_id);
      return classifyTransfer(transfer.status, transfer.failReason);
    },

    async finishRedemption(input: FinishRedemptionInput): Promise<RedemptionState> {
      return finish(input);
    },

    /**
     * Settles or fails (as finishRedemption: idempotent, the first final status wins), then tells
     * a PLC issued before migration 35 its workflow (`plcRedemptionFinished`) so that it ends or retries a due expiry. A
     * retried attempt books nothing twice and the PLC workflow takes the same signal twice alike.
     */
    async settleRedemption(input: FinishRedemptionInput & { tokenId: string }): Promise<RedemptionState> {
      const state = await finish(input);
      // A PLC issued since migration 35 has no workflow of its own: its expiry bucket asks
      // PostgreSQL, so there is nobody to tell (docs/plc.md, "Expiry by time buckets").
      if (state.status !== 'PENDING_PAYMENT' && (await hasOwnWorkflow(pool, input.tokenId))) {
        try {
          await temporal.workflow
            .getHandle(`plc-${input.tokenId}`)
            .signal(plcRedemptionFinishedSignal, { status: state.status === 'SETTLED' ? 'REDEEMED' : 'REVERTED' });
        } catch (error) {
          // The PLC's workflow has ended (its expiry ran first, or it was never kept): nothing to tell.
          if (!(error instanceof WorkflowNotFoundError)) throw error;
        }
      }
      return state;
    },
  };
}

export type RedemptionActivities = ReturnType<typeof createRedemptionActivities>;
