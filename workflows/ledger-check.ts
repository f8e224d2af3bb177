import { proxyActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { LedgerActivities, LedgerCheckResult } from '../activities/ledger.ts';
import { businessStatusKey } from './search-attributes.ts';

/**
 * The ledger check (`ledger-check-<run>`, started by the Temporal schedule `ledger-check`, every
 * LEDGER_CHECK_INTERVAL_MS): every ledger invariant and the totals per bucket, recorded in
 * `ledger_checks`, which the stats dashboard shows (docs/operations-console.md, "Stats"). One
 * statement over the whole ledger: minutes on a large one, so a long timeout and no heartbeat.
 */
const { checkLedger } = proxyActivities<LedgerActivities>({
  startToCloseTimeout: '40 minutes',
  retry: { initialInterval: '10 seconds', maximumInterval: '5 minutes', maximumAttempts: 5 },
});

export async function ledgerCheckWorkflow(): Promise<LedgerCheckResult> {
  const result = await checkLedger({ source: `workflow ${workflowInfo().workflowId}` });
  upsertSearchAttributes([{ key: businessStatusKey, value: result.ok ? 'OK' : 'VIOLATIONS' }]);
  return result;
}
