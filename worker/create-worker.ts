import { createRequire } from 'node:module';
import type { Context as ActivityContext } from '@temporalio/activity';
import { Client } from '@temporalio/client';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { Resource } from '@opentelemetry/resources';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { bundleWorkflowCode, DefaultLogger, Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities/index.ts';
import type { Pool } from '../db/pool.ts';
import type { PinResetMailDeps } from '../activities/security.ts';
import type { GatewayClient } from '../gateway/index.ts';
import { operationLogInterceptor } from './operation-log.ts';
import { workflowsPath } from './workflows-path.ts';

export interface CreateWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  pool: Pool;
  gateway: GatewayClient;
  /** A prebuilt bundle (tests bundle once per run); otherwise the worker bundles at start. */
  workflowBundlePath?: string;
  /** The bundle's code, built once for several workers of one process (`bundleWorkflowCode`). */
  workflowBundleCode?: string;
  shutdownGraceTimeMs?: number;
  /** Outgoing mail for PIN resets (`pinResetMailFromConfig`); absent without SMTP_URL. */
  mail?: PinResetMailDeps | null;
  /** The sticky cache's size (`TEMPORAL_MAX_CACHED_WORKFLOWS`); undefined: the SDK's default. */
  maxCachedWorkflows?: number | undefined;
  /**
   * Traces (infra/tracing.ts): activities continue the trace of the workflow that scheduled them,
   * workflows the trace of the request that started them; workflow spans leave the sandbox through
   * a sink into `spanProcessor`. A prebuilt bundle must then include `workflowTracingModule`.
   */
  tracing?: { spanProcessor: SpanProcessor; resource: Resource } | null;
}

/** The SDK's OpenTelemetry workflow interceptors, bundled with the workflows when tracing is on. */
export const workflowTracingModule = createRequire(import.meta.url).resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

/** The worker: all workflows and all activities, activities built from their dependencies. */
export function createWorker(options: CreateWorkerOptions): Promise<Worker> {
  const tracing = options.tracing ?? null;
  const workflowSource: Pick<WorkerOptions, 'workflowsPath' | 'workflowBundle'> =
    options.workflowBundleCode !== undefined
      ? { workflowBundle: { code: options.workflowBundleCode } }
      : options.workflowBundlePath === undefined
        ? { workflowsPath }
        : { workflowBundle: { codePath: options.workflowBundlePath } };
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...workflowSource,
    activities: createActivities({
      pool: options.pool,
      gateway: options.gateway,
      mail: options.mail ?? null,
      // A client on the worker's own connection, for activities that signal other workflows.
      temporal: new Client({ connection: options.connection, namespace: options.namespace }),
    }),
    // Every activity that moves money or calls the gateway leaves an entry in the operation log.
    interceptors: {
      activity: [
        ...(tracing === null
          ? []
          : [(ctx: ActivityContext) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx), outbound: new OpenTelemetryActivityOutboundInterceptor(ctx) })]),
        operationLogInterceptor(options.pool),
      ],
      ...(tracing === null || options.workflowBundlePath !== undefined ? {} : { workflowModules: [workflowTracingModule] }),
    },
    ...(tracing === null ? {} : { sinks: { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) } }),
    // Running activities get this long to finish on shutdown; each money movement is one
    // database transaction, so a cut-off activity has booked all or nothing and is retried.
    shutdownGraceTime: options.shutdownGraceTimeMs ?? 30_000,
    ...(options.maxCachedWorkflows === undefined ? {} : { maxCachedWorkflows: options.maxCachedWorkflows }),
  });
}

export interface WorkerPair {
  /** TEMPORAL_TASK_QUEUE: every workflow but new PLC workflows (and PLC workflows started there before the split). */
  main: Worker;
  /** The PLC workflows' task queue, with its small sticky cache. */
  plc: Worker;
  /** Runs both; when one stops (shutdown or failure) the other is shut down too. Rejects with the first failure. */
  run(): Promise<void>;
  shutdown(): void;
}

/**
 * The worker process's two workers, the same workflows and activities on both, from one bundle:
 * the main task queue, and the PLC workflows' own (docs/plc.md, "Task queues"). A PLC workflow
 * waits up to 168 hours on its expiry timer; on a queue of its own its worker's sticky cache can
 * be small (TEMPORAL_PLC_MAX_CACHED_WORKFLOWS) without evicting the short workflows of the main
 * queue, whose worker keeps TEMPORAL_MAX_CACHED_WORKFLOWS.
 */
export async function createWorkerPair(options: CreateWorkerOptions & { plcTaskQueue: string; plcMaxCachedWorkflows: number }): Promise<WorkerPair> {
  const shared =
    options.workflowBundlePath === undefined && options.workflowBundleCode === undefined
      ? { workflowBundleCode: (await bundleWorkflowCode({ workflowsPath, logger: quietBundleLogger })).code }
      : {};
  const main = await createWorker({ ...options, ...shared });
  const plc = await createWorker({ ...options, ...shared, taskQueue: options.plcTaskQueue, maxCachedWorkflows: options.plcMaxCachedWorkflows });
  const shutdown = () => {
    for (const worker of [main, plc]) if (worker.getState() === 'RUNNING') worker.shutdown();
  };
  return {
    main,
    plc,
    shutdown,
    async run() {
      const runs = [main, plc].map((worker) =>
        worker.run().finally(() => {
          shutdown();
        }),
      );
      const outcomes = await Promise.allSettled(runs);
      const failed = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
      if (failed !== undefined) throw failed.reason;
    },
  };
}

/** The bundler's own progress lines are not worth a log line each. */
const quietBundleLogger = new DefaultLogger('WARN');
