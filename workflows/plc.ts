import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { PlcActivities, PlcState } from '../activities/plc.ts';
import { failureType } from './failure-type.ts';
import { businessStatusKey } from './search-attributes.ts';

/**
 * A PLC's life (`plc-<token_id>`). The API starts it with update-with-start: the first update
 * stores the PLC and books issuer AVAILABLE -> PROMISED in a local activity and answers the
 * caller. The workflow then holds a durable timer until the PLC is due to expire, and ends early
 * when it is cancelled (an update, booking PROMISED -> AVAILABLE) or redeemed. PostgreSQL decides
 * every transition; the workflow only drives them, so a stale or duplicated signal is harmless.
 */

const local = proxyLocalActivities<PlcActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 5, initialInterval: '100 milliseconds', maximumInterval: '2 seconds' },
});
const { expirePlc } = proxyActivities<PlcActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2 },
});

import { cancelPlcUpdate, issuePlcUpdate, plcRedemptionFinishedSignal, plcTransferredSignal } from './plc-messages.ts';

export interface PlcWorkflowInput {
  tokenId: string;
  issuerPubkey: string;
  /** When the workflow expires the PLC: expires_at plus the clock tolerance (or a test override). */
  expiryDueAtMs: number;
}

export type PlcWorkflowResult =
  | { status: 'REFUSED'; code: string }
  | { status: 'EXPIRED' | 'CANCELLED' | 'REDEEMED'; state: PlcState | null };

/** Bound on the wait-for-redemption loop: a redemption resolves long before this many rounds. */
const expiryAttemptsMax = 50;

export async function plcWorkflow(input: PlcWorkflowInput): Promise<PlcWorkflowResult> {
  let issuing: Promise<{ created: boolean; state: PlcState }> | undefined;
  let issued: { created: boolean; state: PlcState } | undefined;
  let refusedCode: string | undefined;
  let final: PlcWorkflowResult | undefined;
  let redemptionFinished = false;

  const setStatus = (status: string): void => {
    upsertSearchAttributes([{ key: businessStatusKey, value: status }]);
  };
  // The API starts the workflow with BusinessStatus ISSUED (before: ISSUING, then an upsert of
  // ISSUED once issued). The upsert cost a history event and a visibility write on the create's
  // critical path, so it is now made only when the outcome differs: a refusal (REFUSED) or an
  // issue that found the PLC in another state. The start attributes are part of the history, so
  // a workflow started with ISSUING replays the old path exactly. (Not a patched() gate: in this
  // SDK a patch itself upserts TemporalChangeVersion, the very write this change removes.)
  const startedIssuing = workflowInfo().typedSearchAttributes.get(businessStatusKey) === 'ISSUING';

  setHandler(
    issuePlcUpdate,
    async (request) => {
      // Concurrent retries of the same create share one booking.
      const first = issuing === undefined;
      issuing ??= local.issuePlc(request);
      try {
        issued = await issuing;
        if (startedIssuing) setStatus(issued.state.status);
        else if (first && issued.state.status !== 'ISSUED') setStatus(issued.state.status);
        // Only the update that ran the issue answers with its outcome; a retry (concurrent or
        // later) gets created=false, so the API reads the current row for it instead.
        return first ? issued : { created: false, state: issued.state };
      } catch (error) {
        refusedCode ??= failureType(error);
        throw error;
      }
    },
    {
      validator: (request) => {
        if (request.tokenId !== input.tokenId) throw new Error('the update does not belong to this PLC');
      },
    },
  );

  setHandler(cancelPlcUpdate, async () => {
    if (issued === undefined) throw ApplicationFailure.nonRetryable('the PLC is not issued', 'PLC_NOT_FOUND');
    const state = await local.cancelPlc({ tokenId: input.tokenId });
    final = { status: 'CANCELLED', state };
    setStatus('CANCELLED');
    return state;
  });

  setHandler(plcTransferredSignal, () => {
    if (final === undefined && issued !== undefined) setStatus('TRANSFERRED');
  });
  setHandler(plcRedemptionFinishedSignal, (outcome) => {
    redemptionFinished = true;
    if (outcome.status === 'REDEEMED') {
      final = { status: 'REDEEMED', state: null };
      // The attribute follows the PLC to its end (docs/plc.md). Workflows that took this signal
      // before the patch kept their last status (TRANSFERRED) and replay without the upsert.
      if (patched('plc-redeemed-business-status')) setStatus('REDEEMED');
    }
  });

  // The create answers within seconds; a workflow whose update never came ends on its own.
  if (!(await condition(() => issued !== undefined || refusedCode !== undefined, '5 minutes'))) {
    refusedCode = 'NO_ISSUE_UPDATE';
  }
  if (issued === undefined) {
    if (!startedIssuing) setStatus('REFUSED');
    await condition(allHandlersFinished);
    return { status: 'REFUSED', code: refusedCode ?? 'UNKNOWN' };
  }

  for (let attempt = 0; attempt < expiryAttemptsMax && final === undefined; attempt += 1) {
    const waitMs = Math.max(0, input.expiryDueAtMs - Date.now());
    if (await condition(() => final !== undefined, waitMs)) break;
    const outcome = await expirePlc({ tokenId: input.tokenId });
    const status = outcome.state?.status;
    if (outcome.released || status === 'EXPIRED') {
      final = { status: 'EXPIRED', state: outcome.state };
      setStatus('EXPIRED');
    } else if (status === 'CANCELLED' || status === 'REDEEMED') {
      final = { status, state: outcome.state };
      setStatus(status);
    } else {
      // A redemption is in flight: its money already left PROMISED. Wait for its outcome, then
      // expire a reverted PLC.
      redemptionFinished = false;
      await condition(() => redemptionFinished || final !== undefined, '1 day');
    }
  }
  await condition(allHandlersFinished);
  return final ?? { status: 'EXPIRED', state: null };
}
