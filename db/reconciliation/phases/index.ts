import type { LedgerReconcileTool } from '../../../src/reconciliation/tools.ts';
import type { ReconcilePhase } from '../phase.ts';
import { failedChargesPhase, settledChargesPhase } from './charges.ts';
import { cancelledBearersPhase } from './evidence.ts';
import { ledgerFailuresPhase } from './ledger-failures.ts';
import { negativeBucketsPhase } from './negative-buckets.ts';
import { liveIssuedPlcsPhase, overduePlcsPhase, releasedPlcsPhase } from './plcs.ts';
import { failedRedemptionsPhase } from './redemptions.ts';
import { snapshotsPhase } from './snapshots.ts';

/**
 * Every ledger tool's phases, in order. Adding a tool: one entry in `src/reconciliation/tools.ts`
 * (the API route comes from it) and its phases here (gateway tools: in
 * services/reconcile-gateway.ts); adding a part to a tool: one more phase in its list.
 */
export const phasesByTool: Record<LedgerReconcileTool, readonly ReconcilePhase[]> = {
  'fix-balance': [snapshotsPhase],
  'recalculate-snapshots': [snapshotsPhase],
  'fix-negative-balances': [negativeBucketsPhase],
  'fix-failed-pending': [
    ledgerFailuresPhase('redeem-failed', 'REDEEM_FAILED', 'REDEEM_REQUESTED'),
    ledgerFailuresPhase('charge-failed', 'CHARGE_FAILED', 'CHARGE_CREATED'),
    failedRedemptionsPhase,
    failedChargesPhase,
  ],
  'release-expired-promises': [releasedPlcsPhase, overduePlcsPhase],
  'fix-charge-settlements': [settledChargesPhase],
  'plc-issue-bookings': [liveIssuedPlcsPhase],
  'compensate-cancelled-bearers': [cancelledBearersPhase],
};
