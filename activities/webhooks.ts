import { classifyGatewayWebhookText, paymentStatusByEvent, type TransferStatus } from '../gateway/index.ts';
import { noActionReason, payoutEvent } from '../services/webhook-intake.ts';
import { claimInboxEvent, finishInboxEvent, type InboxFinalStatus } from '../db/inbox.ts';
import type { Pool } from '../db/pool.ts';
import { workflowIds } from '../workflows/ids.ts';
import { verifyPaymentEvent, verifyTransferEvent, type Contradiction, type GatewayReader } from '../services/gateway-word.ts';

/**
 * Webhook processing, as explicit steps: the route has authenticated and stored the event; here
 * we classify it, find the business reference it is about, ask the gateway what it says about
 * that transfer or payment, and say which workflow to signal with the gateway's status. The
 * workflow does the signalling (so it is durable and visible), then records the outcome.
 */

export type InboxRoute =
  | {
      kind: 'signal';
      workflowId: string;
      signal: 'transferEvent';
      payload: { eventId: string; transferId: string; status: TransferStatus; failReason: string | null };
      /** Set when the gateway contradicted the event: the signal carries the gateway's own final status. */
      contradiction?: Contradiction;
    }
  | {
      kind: 'signal';
      workflowId: string;
      signal: 'paymentEvent';
      payload: { eventId: string; paymentId: string; status: string };
      contradiction?: Contradiction;
    }
  | { kind: 'ignore'; reason: string; contradiction?: Contradiction };

export function createWebhookActivities(deps: { pool: Pool; gateway: GatewayReader }) {
  const { pool } = deps;
  return {
    /**
     * Routes one stored event: classifies it, finds the redemption or charge it is about, reads
     * that transfer or payment back from the gateway (services/gateway-word.ts) and says which
     * workflow to signal with the gateway's status. An event the gateway contradicts carries the
     * contradiction (flag raised) and is recorded CONTRADICTED; it signals only a final status the
     * gateway itself holds.
     */
    async routeInboxEvent(input: { inboxId: string }): Promise<InboxRoute> {
      const row = await claimInboxEvent(pool, input.inboxId);
      if (row === null) return { kind: 'ignore', reason: 'already processed' };
      if (row.provider !== 'gateway') return { kind: 'ignore', reason: `${row.provider} events are stored only` };
      const event = classifyGatewayWebhookText(row.raw_body);
      const noAction = noActionReason(event);
      if (noAction !== undefined) return { kind: 'ignore', reason: noAction };
      const payout = payoutEvent(event);
      if (payout !== null) {
        const verdict = await verifyTransferEvent(deps, {
          eventId: row.event_id,
          provider: row.provider,
          transferId: payout.payout.id,
          externalReference: payout.payout.externalReference,
          status: payout.status,
          // Left out for a transfer, so that the recorded input of Pix events keeps its shape.
          ...(payout.rail === 'boleto' ? { rail: payout.rail } : {}),
        });
        if (verdict.kind === 'no_redemption' || verdict.kind === 'not_its_transfer') return { kind: 'ignore', reason: verdict.reason };
        if (verdict.kind === 'contradicted') return { kind: 'ignore', reason: verdict.contradiction.reason, contradiction: verdict.contradiction };
        return {
          kind: 'signal',
          workflowId: workflowIds.redemption(verdict.redemption.id),
          signal: 'transferEvent',
          payload: {
            eventId: payout.eventId ?? row.event_id,
            transferId: verdict.transfer.id,
            // The gateway's word, not the event's.
            status: verdict.transfer.status,
            failReason: verdict.transfer.failReason ?? null,
          },
          ...(verdict.contradiction === null ? {} : { contradiction: verdict.contradiction }),
        };
      }
      if (event.kind === 'payment_event') {
        const verdict = await verifyPaymentEvent(deps, {
          eventId: row.event_id,
          provider: row.provider,
          paymentId: event.payment.id,
          externalReference: event.payment.externalReference,
          status: paymentStatusByEvent[event.event] ?? event.payment.status,
        });
        if (verdict.kind === 'no_charge') return { kind: 'ignore', reason: verdict.reason };
        if (verdict.kind === 'contradicted') return { kind: 'ignore', reason: verdict.contradiction.reason, contradiction: verdict.contradiction };
        return {
          kind: 'signal',
          workflowId: workflowIds.charge(verdict.charge.id),
          signal: 'paymentEvent',
          payload: { eventId: event.eventId ?? row.event_id, paymentId: verdict.paymentId, status: verdict.status },
          ...(verdict.contradiction === null ? {} : { contradiction: verdict.contradiction }),
        };
      }
      return { kind: 'ignore', reason: `${event.kind} is not routed` };
    },

    async finishInboxEvent(input: { inboxId: string; status: InboxFinalStatus | 'DEAD'; result?: unknown; error?: string }): Promise<void> {
      await finishInboxEvent(pool, input.inboxId, input);
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
