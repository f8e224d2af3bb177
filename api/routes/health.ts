import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { countAppliedMigrations, countMigrationFiles } from '../../db/migrate.ts';

/** Resolves to the check's outcome, or to a failure once `timeoutMs` passes: never hangs. */
async function bounded(check: () => Promise<void>, timeoutMs: number): Promise<{ ok: boolean; error?: string }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<{ ok: boolean; error: string }>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, error: `no answer within ${timeoutMs} ms` }), timeoutMs);
  });
  try {
    return await Promise.race([
      check().then(
        () => ({ ok: true }),
        (error: unknown) => ({ ok: false, error: error instanceof Error ? error.message.slice(0, 200) : 'failed' }),
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const checkResult = z.object({ ok: z.boolean(), error: z.string().optional() });
const readiness = z
  .object({
    status: z.enum(['ready', 'not_ready']),
    checks: z.object({ postgres: checkResult, migrations: checkResult, temporal: checkResult }),
  })
  .meta({ id: 'Readiness' });

export async function healthRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const expectedMigrations = await countMigrationFiles();

  routes.get(
    '/healthz',
    { schema: { tags: ['health'], summary: 'The process is alive', response: { 200: z.object({ status: z.literal('ok') }) } } },
    async () => ({ status: 'ok' as const }),
  );

  routes.get(
    '/readyz',
    {
      schema: {
        tags: ['health'],
        summary: 'PostgreSQL and Temporal reachable, migrations applied',
        response: { 200: readiness, 503: readiness },
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
