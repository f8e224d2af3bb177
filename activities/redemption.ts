import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { gatewayIdempotencyKey, isGatewayError, type GatewayClient } from '../gateway/index.ts';
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

export function createRedemptionActivities(deps: { pool: Pool; gateway: GatewayClient; temporal: Pick<Client, 'workflow'> }) {
  const { pool, gateway, temporal } = deps;

  async function finish(input: FinishRedemptionInput): Promise<RedemptionState> {
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
   * the payment of the boleto (a bill payment). Both answer in one status vocabulary (PENDING,
   * BANK_PROCESSING, DONE, FAILED, CANCELLED), so everything after this is the same for both.
   */
  async function createTransfer(row: RedemptionRow): Promise<{ id: string; status: string; failReason: string | null }> {
    const amountMinor = row.amount_minor - row.fee_minor;
    if (row.rail === 'boleto') {
      return gateway.createBillPayment({
        idempotencyKey: gatewayIdempotencyKey('bill', payoutIdempotencyKey(row.id, row.payout_attempt)),
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
      idempotencyKey: gatewayIdempotencyKey('transfer', payoutIdempotencyKey(row.id, row.payout_attempt)),
      amountMinor,
      pixAddressKey: row.destination,
      pixAddressKeyType: row.destination_type,
      description: `PLC ${row.token_id}`,
      externalReference: row.id,
    });
  }

  /** Reads the payout back by the redemption's rail. */
  function readPayout(row: RedemptionRow, payoutId: string): Promise<{ id: string; status: string; failReason: string | null }> {
    return row.rail === 'boleto' ? gateway.getBillPayment(payoutId) : gateway.getTransfer(payoutId);
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
      // No answer was ever recorded: the same attempt's key finds a transfer created by a request
      // whose answer was lost, or creates it now. Either way one transfer for this attempt.
      const transfer = await createTransfer(row);
      await recordGatewayTransfer(pool, row.id, transfer.id, transfer.status);
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
        const transfer = row.gateway_transfer_id === null ? await createTransfer(row) : await readPayout(row, row.gateway_transfer_id);
        await recordGatewayTransfer(pool, row.id, transfer.id, transfer.status);
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
     * the PLC's workflow (`plcRedemptionFinished`) so that it ends or retries a due expiry. A
     * retried attempt books nothing twice and the PLC workflow takes the same signal twice alike.
     */
    async settleRedemption(input: FinishRedemptionInput & { tokenId: string }): Promise<RedemptionState> {
      const state = await finish(input);
      if (state.status !== 'PENDING_PAYMENT') {
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
