import type { Client } from '@temporalio/client';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Pool } from '../../db/pool.ts';
import type { GatewayClient } from '../../gateway/index.ts';
import type { Config } from '../../infra/config.ts';
import type { SecurityService } from '../services/security.ts';
import { pendingEligibilitySources } from '../../src/ops/canary.ts';
import { createRealtimeBus, type RealtimeBus } from '../realtime.ts';
import { createDashboards, type Dashboards } from '../services/dashboards.ts';
import { createSettlementRetry, type SettlementRetry } from '../services/settlement-retry.ts';
import { createRedemptionService, type RedemptionService } from '../../services/redemption.ts';
import { createTransferService, type TransferService } from '../../services/transfer.ts';

/**
 * The app's dependencies, handed in by whoever builds it (the server process or a test): the
 * PostgreSQL pool and the one shared Temporal client, and the services its routes call. The app
 * never opens its own.
 */
export interface AppDeps {
  config: Config;
  pool: Pool;
  temporal: Client;
  gateway: GatewayClient;
  /** The security operations (PIN, key backup): api/services/security.ts. */
  security: SecurityService;
}

/** What `buildApp` takes: a service left out is built from the rest (`createAppServices`). */
export type AppDepsInput = Omit<AppDeps, 'security'> & Partial<Pick<AppDeps, 'security'>>;

/** The services routes call (orchestration lives here, not in route handlers), built from the deps. */
export interface AppServices {
  dashboards: Dashboards;
  realtime: RealtimeBus;
  settlementRetry: SettlementRetry;
  /** Registering transfer hops (one PLC's chain per call), with the process's chain memo: services/transfer.ts. */
  transfers: TransferService;
  /** Opening a redemption from a presented PLC and a redeem authorisation: services/redemption.ts. */
  redemptions: RedemptionService;
}

export function createServices(deps: AppDeps, log: FastifyBaseLogger): AppServices {
  return {
    settlementRetry: createSettlementRetry(deps),
    transfers: createTransferService(deps),
    redemptions: createRedemptionService(deps),
    realtime: createRealtimeBus({
      pool: deps.pool,
      databaseUrl: deps.config.DATABASE_URL,
      pollMs: deps.config.REALTIME_POLL_MS,
      keepEvents: deps.config.REALTIME_EVENTS_KEEP,
      retentionMs: deps.config.REALTIME_EVENTS_RETENTION_MS,
      log,
    }),
    dashboards: createDashboards({
      pool: deps.pool,
      queueLagAlertMs: deps.config.QUEUE_LAG_ALERT_MS,
      ledgerCheckIntervalMs: deps.config.LEDGER_CHECK_INTERVAL_MS,
      // Reputation tiers and the blocklist do not exist yet (issue 21): rules that need them are pending.
      eligibility: pendingEligibilitySources,
    }),
  };
}

declare module 'fastify' {
  interface FastifyInstance {
    deps: AppDeps;
    services: AppServices;
  }
}

export const depsPlugin = fp<{ deps: AppDeps }>(
  async (app: FastifyInstance, options) => {
    app.decorate('deps', options.deps);
    const services = createServices(options.deps, app.log);
    app.decorate('services', services);
    app.addHook('onReady', async () => {
      services.realtime.startPruning();
    });
    // Before the server waits for its connections to end: the event streams never end by themselves.
    app.addHook('preClose', async () => {
      await services.realtime.close();
    });
  },
  { name: 'deps' },
);
