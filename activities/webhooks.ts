import { classifyGatewayWebhookText, isFinalTransferStatus, paymentStatusByEvent, transferStatusByEvent, type GatewayWebhookClassification, type TransferStatus } from '../gateway/index.ts';
import { claimInboxEvent, finishInboxEvent } from '../db/inbox.ts';
import type { Pool } from '../db/pool.ts';
import { getRedemption, getRedemptionByTransfer } from '../db/redemptions.ts';
import { maybeOne } from '../db/sql.ts';
import { z } from 'zod';

/**
 * Webhook processing, as explicit steps: the route has authenticated and stored the event; here
 * we classify it, find the business reference it is about, and say which workflow to signal with
 * what. The workflow does the signalling (so it is durable and visible), then records the outcome.
 */

export type InboxRoute =
  | { kind: 'signal'; workflowId: string; signal: 'transferEvent'; payload: { eventId: string; transferId: string; status: string; failReason: string | null } }
  | { kind: 'signal'; workflowId: string; signal: 'paymentEvent'; payload: { eventId: string; paymentId: string; status: string } }
  | { kind: 'ignore'; reason: string };

/**
 * Why a stored gateway event needs no processing, judged by its content alone, or undefined when
 * it may need some: a transfer event with a status that is not final (only DONE, FAILED and
 * CANCELLED move a redemption, which ignores the others), a body that is not a notification we
 * act on. Payment events always go to their processing (the charge workflow keeps their order).
 */
// Built once (zod compiles a schema's parser on its first use).
const chargeIdRow = z.object({ id: z.string().uuid() });

export function settledOnArrival(rawBody: string): { status: 'IGNORED'; result: { reason: string } } | undefined {
  const reason = noActionReason(classifyGatewayWebhookText(rawBody));
  return reason === undefined ? undefined : { status: 'IGNORED', result: { reason } };
}

function transferEventStatus(event: Extract<GatewayWebhookClassification, { kind: 'transfer_event' }>): TransferStatus {
  return transferStatusByEvent[event.event] ?? event.transfer.status;
}

function noActionReason(event: GatewayWebhookClassification): string | undefined {
  if (event.kind === 'transfer_event') {
    const status = transferEventStatus(event);
    return isFinalTransferStatus(status) ? undefined : `transfer ${event.transfer.id} is ${status}: only a final status acts`;
  }
  if (event.kind === 'unknown') return event.reason;
  if (event.kind === 'transfer_validation') return `${event.kind} is answered synchronously`;
  return undefined;
}

export function createWebhookActivities(deps: { pool: Pool }) {
  const { pool } = deps;
  return {
    async routeInboxEvent(input: { inboxId: string }): Promise<InboxRoute> {
      const row = await claimInboxEvent(pool, input.inboxId);
      if (row === null) return { kind: 'ignore', reason: 'already processed' };
      if (row.provider !== 'gateway') return { kind: 'ignore', reason: `${row.provider} events are stored only` };
      const event = classifyGatewayWebhookText(row.raw_body);
      const noAction = noActionReason(event);
      if (noAction !== undefined) return { kind: 'ignore', reason: noAction };
      if (event.kind === 'transfer_event') {
        // The transfer's externalReference is our redemption id, so an event that arrives before
        // we recorded the transfer id still finds its redemption.
        const redemption =
          (await getRedemptionByTransfer(pool, event.transfer.id)) ??
          (event.transfer.externalReference === null ? null : await getRedemption(pool, event.transfer.externalReference).catch(() => null));
        if (redemption === null) return { kind: 'ignore', reason: `no redemption for transfer ${event.transfer.id}` };
        return {
          kind: 'signal',
          workflowId: `redemption-${redemption.id}`,
          signal: 'transferEvent',
          payload: {
            eventId: event.eventId,
            transferId: event.transfer.id,
            status: transferEventStatus(event),
            failReason: event.transfer.failReason ?? null,
          },
        };
      }
      if (event.kind === 'payment_event') {
        const byPayment = await maybeOne(pool, chargeIdRow, {
          name: 'charge-by-payment',
          text: 'SELECT id FROM charges WHERE gateway_payment_id = $1 OR id::text = $2',
          values: [event.payment.id, event.payment.externalReference ?? ''],
        });
        if (byPayment === null) return { kind: 'ignore', reason: `no charge for payment ${event.payment.id}` };
        return {
          kind: 'signal',
          workflowId: `charge-${byPayment.id}`,
          signal: 'paymentEvent',
          payload: { eventId: event.eventId, paymentId: event.payment.id, status: paymentStatusByEvent[event.event] ?? event.payment.status },
        };
      }
      return { kind: 'ignore', reason: `${event.kind} is not routed` };
    },

    async finishInboxEvent(input: { inboxId: string; status: 'PROCESSED' | 'IGNORED' | 'DEAD'; result?: unknown; error?: string }): Promise<void> {
      await finishInboxEvent(pool, input.inboxId, input);
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
