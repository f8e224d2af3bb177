import type { TestApp } from './app.ts';
import { waitFor } from './wait.ts';

/**
 * The outcome of a stored gateway event once it is processed (PROCESSED, IGNORED, CONTRADICTED or
 * DEAD): in the webhook's request since issue 38 (services/webhook-routing.ts), or by the event's
 * workflow when the request could not (`webhook-gateway-<event_id>`).
 */
export async function inboxOutcome(t: Pick<TestApp, 'db'>, eventId: string, timeoutMs = 30_000): Promise<string> {
  return waitFor(
    async () => {
      const { rows } = await t.db.pool.query<{ status: string }>(`SELECT status FROM webhook_inbox WHERE provider = 'gateway' AND event_id = $1`, [eventId]);
      const status = rows[0]?.status;
      return status === undefined || status === 'RECEIVED' || status === 'PROCESSING' ? undefined : status;
    },
    { what: `the outcome of gateway event ${eventId}`, timeoutMs },
  );
}
