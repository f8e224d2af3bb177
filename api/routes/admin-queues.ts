import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { queueStats } from '../../db/queue-stats.ts';
import { adminErrors } from '../schemas/common.ts';

const ageMs = z.number().int().nullable().describe('How long the oldest waiting item has waited, in ms; null when none waits');

const queueStatsResponse = z
  .object({
    ok: z.boolean().describe('No queue lagging and no dead webhook event'),
    lag_alert_ms: z.number().int().describe('QUEUE_LAG_ALERT_MS: the age from which a queue is reported as lagging'),
    queues: z.object({
      plc_status_outbox: z.object({
        pending: z.number().int().describe('PLC statuses not yet delivered to their workflows'),
        failing: z.number().int().describe('Of those, how many had a delivery fail (retried with backoff)'),
        max_attempts: z.number().int().describe('Most delivery attempts of a waiting status'),
        oldest_age_ms: ageMs,
        last_error: z.string().nullable().describe('The latest delivery error, if any waiting status has one'),
        lagging: z.boolean(),
      }),
      webhook_inbox: z.object({
        received: z.number().int().describe('Events stored and not yet routed'),
        processing: z.number().int().describe('Events being routed'),
        dead: z.number().int().describe('Events whose routing gave up after its retries: need an operator'),
        oldest_age_ms: ageMs,
        lagging: z.boolean(),
      }),
    }),
  })
  .meta({ id: 'QueueStatsResponse' });

/** Administration: the processing queues kept in PostgreSQL (db/queue-stats.ts). */
export async function adminQueueRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool, config } = app.deps;
  app.addHook('onRequest', app.requireAdmin());

  routes.get(
    '/queues/stats',
    {
      schema: {
        tags: ['admin: monitor'],
        summary: 'The processing queues: PLC status outbox and webhook inbox backlogs, their age, what fails',
        description:
          'The backlog of each queue the service drains in the background: the PLC status outbox (statuses waiting to be signalled to PLC workflows) and the webhook inbox (events waiting to be processed, and DEAD ones), with the age of the oldest item, failed deliveries and the latest error. A queue whose oldest item is older than `QUEUE_LAG_ALERT_MS` is `lagging`; `ok` is false while one lags or an event is DEAD: what an alert should poll.',
        security: [{ bearer: [] }],
        response: { 200: queueStatsResponse, ...adminErrors },
      },
    },
    async () => {
      const row = await queueStats(pool);
      const alertMs = config.QUEUE_LAG_ALERT_MS;
      const age = (ms: number | null) => (ms === null ? null : Math.max(0, Math.round(ms)));
      const outboxLagging = (row.outbox_oldest_ms ?? 0) >= alertMs;
      const inboxLagging = (row.inbox_oldest_ms ?? 0) >= alertMs;
      return {
        ok: !outboxLagging && !inboxLagging && row.inbox_dead === 0,
        lag_alert_ms: alertMs,
        queues: {
          plc_status_outbox: {
            pending: row.outbox_pending,
            failing: row.outbox_failing,
            max_attempts: row.outbox_max_attempts ?? 0,
            oldest_age_ms: age(row.outbox_oldest_ms),
            last_error: row.outbox_last_error,
            lagging: outboxLagging,
          },
          webhook_inbox: {
            received: row.inbox_received,
            processing: row.inbox_processing,
            dead: row.inbox_dead,
            oldest_age_ms: age(row.inbox_oldest_ms),
            lagging: inboxLagging,
          },
        },
      };
    },
  );
}
