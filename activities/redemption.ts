import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { gatewayIdempotencyKey, isGatewayError, type GatewayClient } from '../gateway/index.ts';
import type { Pool } from '../db/pool.ts';
import { finishRedemption, getRedemption, openRedemption, recordGatewayTransfer, type RedemptionRow } from '../db/redemptions.ts';
import { raiseRiskFlag } from '../db/risk-flags.ts';
import { DomainError } from '../src/errors.ts';
import { decideRegistration, type KnownRecord } from '../src/plc/register-transfers.ts';
import { hexToBytes, type TransferRecord } from '../src/protocol/index.ts';
import { plcRedemptionFinishedSignal } from '../workflows/plc.ts';
import { refusalsAsFailures } from './failures.ts';

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
  destination: string;
  destinationType: 'CPF' | 'CNPJ' | 'EMAIL' | 'PHONE' | 'EVP';
  deviceId: string;
  feeMinor: string;
  /** The presented chain (already verified by the API), as hex records. */
  presented: KnownRecord[];
  expiryGraceMs: number;
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
  };
}

export type PayoutStatus = { final: false; gatewayStatus: string } | { final: true; done: boolean; gatewayStatus: string; failReason: string | null };

function toTransferRecord(record: KnownRecord): TransferRecord {
  return {
    senderPublicKey: hexToBytes(record.senderPubkey, 32),
    recipientPublicKey: hexToBytes(record.recipientPubkey, 32),
    timestampMs: record.timestampMs,
    nonce: hexToBytes(record.nonce, 16),
    prevHash: hexToBytes(record.prevHash, 32),
    signature: hexToBytes(record.signature, 64),
    hash: hexToBytes(record.recordHash, 32),
  };
}

function classifyTransfer(status: string, failReason: string | null): PayoutStatus {
  if (status === 'DONE') return { final: true, done: true, gatewayStatus: status, failReason: null };
  if (status === 'FAILED' || status === 'CANCELLED') return { final: true, done: false, gatewayStatus: status, failReason: failReason ?? status };
  return { final: false, gatewayStatus: status };
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
            destination: input.destination,
            destinationType: input.destinationType,
            deviceId: input.deviceId,
            feeMinor: BigInt(input.feeMinor),
            nowMs: Date.now(),
            expiryGraceMs: input.expiryGraceMs,
          },
          (plc, known) => decideRegistration({ status: plc.status, redemptionInFlight: plc.redemption_id !== null }, known, presented),
        );
        if ('redemption' in result) return { created: result.created, state: toRedemptionState(result.redemption) };
        if (result.kind === 'fork') {
          const { decision } = result;
          const flag = await raiseRiskFlag(pool, {
            flagType: 'DOUBLE_SPEND_FORK',
            severity: 'high',
            subjectPubkey: decision.culpritPubkey,
            tokenId: input.tokenId,
            dedupeKey: `fork:${input.tokenId}:${decision.known.prevHash}:${decision.presented.recordHash}`,
            details: { prev_hash: decision.known.prevHash, position: decision.index, at: 'redeem' },
          });
          throw new DomainError('DOUBLE_SPEND_DETECTED', 'the presented chain forks from the registered one', {
            token_id: input.tokenId,
            signer_pubkey: decision.culpritPubkey,
            prev_hash: decision.known.prevHash,
            position: decision.index,
            registered_record_hash: decision.known.recordHash,
            presented_record_hash: decision.presented.recordHash,
            risk_flag_id: flag.id,
          });
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

    /** Creates the Pix payout at the gateway, or finds the one already created (same idempotency key). */
    async createPayout(input: { redemptionId: string }): Promise<{ transferId: string | null; status: PayoutStatus }> {
      const row = await load(input.redemptionId);
      if (row.status !== 'PENDING_PAYMENT') {
        return {
          transferId: row.gateway_transfer_id,
          status: { final: true, done: row.status === 'SETTLED', gatewayStatus: row.gateway_status ?? row.status, failReason: row.failure_reason },
        };
      }
      try {
        const transfer =
          row.gateway_transfer_id === null
            ? await gateway.createTransfer({
                idempotencyKey: gatewayIdempotencyKey('transfer', row.id),
                amountMinor: row.amount_minor - row.fee_minor,
                pixAddressKey: row.destination,
                pixAddressKeyType: row.destination_type,
                description: `PLC ${row.token_id}`,
                externalReference: row.id,
              })
            : await gateway.getTransfer(row.gateway_transfer_id);
        await recordGatewayTransfer(pool, row.id, transfer.id, transfer.status);
        return { transferId: transfer.id, status: classifyTransfer(transfer.status, transfer.failReason ?? null) };
      } catch (error) {
        if (isGatewayError(error) && !error.retryable) {
          // A refusal by the gateway (an invalid key, a validation error): no payout will happen.
          return {
            transferId: null,
            status: { final: true, done: false, gatewayStatus: `REFUSED:${error.code}`, failReason: error.message.slice(0, 300) },
          };
        }
        throw error;
      }
    },

    /** Asks the gateway for the payout's status (the fallback when no webhook came in time). */
    async readPayoutStatus(input: { redemptionId: string }): Promise<PayoutStatus> {
      const row = await load(input.redemptionId);
      if (row.gateway_transfer_id === null) return { final: false, gatewayStatus: 'NOT_CREATED' };
      const transfer = await gateway.getTransfer(row.gateway_transfer_id);
      return classifyTransfer(transfer.status, transfer.failReason ?? null);
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
