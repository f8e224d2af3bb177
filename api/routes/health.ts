import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { countAppliedMigrations, countMigrationFiles } from '../../db/migrate.ts';
import { errorResponse } from '../schemas/common.ts';

/** Resolves to the check's outcome and how long it took, or to a failure once `timeoutMs` passes: never hangs. */
async function bounded(check: () => Promise<void>, timeoutMs: number): Promise<{ ok: boolean; latency_ms: number; error?: string }> {
  let timer: NodeJS.Timeout | undefined;
  const started = performance.now();
  const took = () => Math.round(performance.now() - started);
  const timeout = new Promise<{ ok: boolean; latency_ms: number; error: string }>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, latency_ms: took(), error: `no answer within ${timeoutMs} ms` }), timeoutMs);
  });
  try {
    return await Promise.race([
      check().then(
        () => ({ ok: true, latency_ms: took() }),
        (error: unknown) => ({ ok: false, latency_ms: took(), error: error instanceof Error ? error.message.slice(0, 200) : 'failed' }),
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const checkResult = z.object({
  ok: z.boolean(),
  latency_ms: z.number().int().optional().describe('how long the check took (at most READINESS_TIMEOUT_MS)'),
  error: z.string().optional(),
});
const readiness = z
  .object({
    status: z.enum(['ready', 'not_ready']),
    checks: z.object({ postgres: checkResult, migrations: checkResult, temporal: checkResult }),
  })
  .meta({ id: 'Readiness' });

export async function healthRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const expectedMigrations = await countMigrationFiles();

  // Liveness: /healthz, and /livez under the name Kubernetes' probes use (deploy/kubernetes/api.yaml).
  for (const url of ['/healthz', '/livez'] as const) {
    routes.get(
      url,
      {
        schema: {
          tags: ['health'],
          summary: 'The process is alive',
          description: 'Liveness: answers 200 as long as the process serves requests; checks nothing else (see /readyz).',
          response: { 200: z.object({ status: z.literal('ok') }) },
        },
      },
      async () => ({ status: 'ok' as const }),
    );
  }

  routes.get(
    '/readyz',
    {
      schema: {
        tags: ['health'],
        summary: 'PostgreSQL and Temporal each reachable (checked separately, each bounded by READINESS_TIMEOUT_MS), migrations applied; 503 when any is not',
        description:
          'Readiness: 200 when PostgreSQL answers, every migration file is applied and the Temporal frontend answers, each check bounded by `READINESS_TIMEOUT_MS` and reported with its latency; 503 with the failing checks otherwise, and while the server shuts down. A load balancer should send traffic only while this answers 200.',
        // Not ready (the checks), or the server shutting down (an ErrorResponse).
        response: { 200: readiness, 503: z.union([readiness, errorResponse]) },
      },
    },
    async (_request, reply) => {
      const { pool, temporal, config } = app.deps;
      const timeoutMs = config.READINESS_TIMEOUT_MS;
      let applied = -1;
      const [postgres, temporalCheck] = await Promise.all([
        bounded(async () => {
          applied = await countAppliedMigrations(pool);
        }, timeoutMs),
        bounded(async () => {
          await temporal.workflowService.getSystemInfo({});
        }, timeoutMs),
      ]);
      const migrations =
        postgres.ok && applied >= expectedMigrations
          ? { ok: true }
          : { ok: false, error: postgres.ok ? `${applied} of ${expectedMigrations} migrations applied` : 'database unreachable' };
      const ready = postgres.ok && migrations.ok && temporalCheck.ok;
      return reply.code(ready ? 200 : 503).send({
        status: ready ? 'ready' : 'not_ready',
        checks: { postgres, migrations, temporal: temporalCheck },
      });
    },
  );
}
