import { getPlc, issuePlc, listOverdue, releasePlc } from '../db/plcs.ts';
import { raiseRiskFlag } from '../db/risk-flags.ts';
import type { Pool } from '../db/pool.ts';
import { DomainError } from '../src/errors.ts';
import type { PlcStatus } from '../src/plc/lifecycle.ts';
import type { Currency } from '../src/money/currency.ts';
import { refusalsAsFailures } from './failures.ts';
import { toPlcState } from '../services/plc-state.ts';

/**
 * The PLC workflow's activities: issue (store + AVAILABLE -> PROMISED), cancel and expire
 * (PROMISED -> AVAILABLE). Each is one database transaction with a guarded state transition;
 * retries are idempotent by the token id.
 */

export interface IssuePlcInput {
  tokenId: string;
  issuerPubkey: string;
  amountMinor: string;
  currency: Currency;
  createdAtMs: number;
  expiresAtMs: number;
  nonce: string;
  commitmentHash: string;
  signature: string;
  deviceId: string;
  amountMaxMinor: string;
  dailyLimitMinor: string;
}

/** What the workflow and the API need of a PLC; amounts as strings (payloads are JSON). */
export interface PlcState {
  tokenId: string;
  status: PlcStatus;
  amountMinor: string;
  currency: Currency;
  issuerPubkey: string;
  bearerPubkey: string;
  chainLength: number;
  createdAtMs: number;
  expiresAtMs: number;
  issueTxId: string;
  finalTxId: string | null;
  // The rest of what the API answers a create with, so that it need not read the row back.
  // Optional: results recorded by workers before they were added lack them.
  headHash?: string;
  commitmentHash?: string;
  redemptionInFlight?: boolean;
  statusChangedAtMs?: number;
}

export interface ReleaseOutcome {
  released: boolean;
  state: PlcState | null;
}

export function createPlcActivities(deps: { pool: Pool }) {
  return {
    async issuePlc(input: IssuePlcInput): Promise<{ created: boolean; state: PlcState }> {
      return refusalsAsFailures(async () => {
        const result = await issuePlc(
          deps.pool,
          {
            tokenId: input.tokenId,
            issuerPubkey: input.issuerPubkey,
            amountMinor: BigInt(input.amountMinor),
            currency: input.currency,
            createdAtMs: input.createdAtMs,
            expiresAtMs: input.expiresAtMs,
            nonce: input.nonce,
            commitmentHash: input.commitmentHash,
            signature: input.signature,
            deviceId: input.deviceId,
          },
          { amountMaxMinor: BigInt(input.amountMaxMinor), dailyLimitMinor: BigInt(input.dailyLimitMinor) },
        );
        return { created: result.created, state: toPlcState(result.plc) };
      });
    },

    async cancelPlc(input: { tokenId: string }): Promise<PlcState> {
      return refusalsAsFailures(async () => {
        const result = await releasePlc(deps.pool, input.tokenId, 'CANCELLED');
        if (result.plc === null) throw new DomainError('PLC_NOT_FOUND', 'no such PLC');
        if (!result.released && result.plc.status !== 'CANCELLED') {
          throw new DomainError('PLC_NOT_CANCELLABLE', `a ${result.plc.status} PLC cannot be cancelled`, {
            status: result.plc.status,
            chain_length: result.plc.chain_length,
          });
        }
        return toPlcState(result.plc);
      });
    },

    async expirePlc(input: { tokenId: string }): Promise<ReleaseOutcome> {
      const result = await releasePlc(deps.pool, input.tokenId, 'EXPIRED');
      return { released: result.released, state: result.plc === null ? null : toPlcState(result.plc) };
    },

    async readPlcState(input: { tokenId: string }): Promise<PlcState | null> {
      const row = await getPlc(deps.pool, input.tokenId);
      return row === null ? null : toPlcState(row);
    },
  };
}


export interface ExpireSweepBatch {
  expiredTokenIds: string[];
  /** True when the batch was full: there may be more to do. */
  more: boolean;
}

/** The expire-tokens sweep: expires one bounded batch of overdue PLCs, flagging each. */
export function createExpireSweepActivities(deps: { pool: Pool }) {
  return {
    async expireOverdueBatch(input: { graceMs: number; batchSize: number; runId: string }): Promise<ExpireSweepBatch> {
      const overdue = await listOverdue(deps.pool, input.graceMs, input.batchSize);
      const expiredTokenIds: string[] = [];
      for (const { token_id: tokenId } of overdue) {
        const result = await releasePlc(deps.pool, tokenId, 'EXPIRED');
        if (!result.released || result.plc === null) continue;
        expiredTokenIds.push(tokenId);
        // Its own workflow should have expired it: an operator wants to know why it did not.
        await raiseRiskFlag(deps.pool, {
          flagType: 'OVERDUE_EXPIRY',
          severity: 'low',
          subjectPubkey: result.plc.issuer_pubkey,
          tokenId,
          dedupeKey: `overdue-expiry:${tokenId}`,
          details: { expires_at: result.plc.expires_at.toISOString(), sweep_run_id: input.runId },
        });
      }
      return { expiredTokenIds, more: overdue.length === input.batchSize };
    },
  };
}

export type PlcActivities = ReturnType<typeof createPlcActivities> & ReturnType<typeof createExpireSweepActivities>;
