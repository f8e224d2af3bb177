import type { Client } from '@temporalio/client';
import type { Pool } from '../db/pool.ts';
import type { GatewayClient } from '../gateway/index.ts';
import { createChargeActivities } from './charges.ts';
import { createLedgerActivities } from './ledger.ts';
import { createReconciliationActivities } from './reconciliation.ts';
import { createExpireSweepActivities, createPlcActivities } from './plc.ts';
import { createPlcExpiryActivities } from './plc-expiry.ts';
import { createLimitReviewActivities } from './plc-limits.ts';
import { createRedemptionActivities } from './redemption.ts';
import { createSecurityActivities, type PinResetMailDeps } from './security.ts';
import { createWebhookActivities } from './webhooks.ts';
import { createWebhookMonitorActivities } from './webhook-monitor.ts';

/** Every activity the worker registers, built from the dependencies handed in. */
export interface ActivityDeps {
  pool: Pool;
  gateway: GatewayClient;
  /** For activities that signal another workflow (a redemption telling its PLC's workflow). */
  temporal: Pick<Client, 'workflow'>;
  /** Outgoing mail for PIN resets; absent or null without SMTP_URL (the reset activity then fails, non-retryable). */
  mail?: PinResetMailDeps | null;
}

export function createActivities(deps: ActivityDeps) {
  return {
    ...createLedgerActivities(deps),
    ...createPlcActivities(deps),
    ...createReconciliationActivities(deps),
    ...createExpireSweepActivities(deps),
    ...createPlcExpiryActivities(deps),
    ...createRedemptionActivities(deps),
    ...createWebhookActivities(deps),
    ...createChargeActivities(deps),
    ...createWebhookMonitorActivities(deps),
    ...createSecurityActivities(deps),
    ...createLimitReviewActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
