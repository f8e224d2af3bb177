import { defineSignal, defineUpdate } from '@temporalio/workflow';
import type { IssuePlcInput, PlcState } from '../activities/plc.ts';

/**
 * Messages of the PLC workflow (`plc-<token_id>`), in a module of their own so that the API and
 * the activities that send them never import the workflow's code (the samples' `shared.ts`).
 */
export const issuePlcUpdate = defineUpdate<{ created: boolean; state: PlcState }, [IssuePlcInput]>('issuePlc');
export const cancelPlcUpdate = defineUpdate<PlcState, []>('cancelPlc');
/** Sent through the PLC status outbox (api/plc-status-dispatcher.ts) after a first hop moved the PLC from ISSUED to TRANSFERRED. */
export const plcTransferredSignal = defineSignal<[{ chainLength: number }]>('plcTransferred');
/** Sent by a redemption when it settles or fails, so that a due expiry is retried. */
export const plcRedemptionFinishedSignal = defineSignal<[{ status: 'REDEEMED' | 'REVERTED' }]>('plcRedemptionFinished');
