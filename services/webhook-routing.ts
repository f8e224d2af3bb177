import { classifyGatewayWebhookText, paymentStatusByEvent, type TransferStatus } from '../gateway/index.ts';
import { noActionReason, payoutEvent } from './webhook-intake.ts';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { claimInboxEvent, finishInboxEvent, type InboxFinalStatus } from '../db/inbox.ts';
import { recordOperation } from '../db/operation-log.ts';
import { paymentEventSignal } from '../workflows/charge-signals.ts';
import { transferEventSignal } from '../workflows/redemption-messages.ts';
import type { Pool } from '../db/pool.ts';
import { workflowIds } from '../workflows/ids.ts';
import { verifyPaymentEvent, verifyTransferEvent, type Contradiction, type GatewayReader } from './gateway-word.ts';

/**
 * Webhook processing, as explicit steps: the route has authenticated and stored the event; here
 * we classify it, find the business reference it is about, ask the gateway what it says about
 * that transfer or payment, and say which workflow to signal with the gateway's status.
 *
 * `processInboxEvent` runs the three steps (route, signal, record) in the webhook's request, before
 * it is acknowledged: the redemption or charge hears the gateway's status with no workflow of the
 * event's own (issue 38: 14 history events and two workflow tasks fewer per redemption). Durability
 * is the inbox row's and the gateway's: an event not acknowledged is delivered again, an event
 * stored but not processed (the process died) is RECEIVED and processed by the redelivery; when a
 * step fails here (the gateway cannot be read, Temporal or the database refuses) the route starts
 * the event's workflow (`webhook-<provider>-<event_id>`, workflows/webhook-event.ts), which retries
 * it and ends it DEAD for an operator, as every event before.
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

export async function routeInboxEvent(deps: { pool: Pool; gateway: GatewayReader }, input: { inboxId: string }): Promise<InboxRoute> {
  const { pool } = deps;
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
}

/**
 * Route, signal, record, in the caller (the webhook route): what workflows/webhook-event.ts does,
 * step for step, with the same outcomes (PROCESSED, IGNORED, CONTRADICTED). Throws when a step
 * fails; the caller then starts the event's workflow, which takes the row over (a claimed row is
 * claimed again) and retries.
 */
export async function processInboxEvent(
  deps: { pool: Pool; gateway: GatewayReader; temporal: Pick<Client, 'workflow'> },
  input: { inboxId: string },
): Promise<InboxFinalStatus> {
  const startedAt = new Date();
  const route = await routeInboxEvent(deps, input);
  // The operation log's entry of the routing (the workflow's `routeInboxEvent` activity writes it there).
  await recordOperation(deps.pool, { operationType: 'WEBHOOK_ROUTING', step: 'routeInboxEvent', ownerId: null, referenceId: input.inboxId, startedAt });
  const finish = async (status: InboxFinalStatus, result: unknown): Promise<InboxFinalStatus> => {
    await finishInboxEvent(deps.pool, input.inboxId, { status, result });
    return status;
  };
  const contradicted = route.contradiction !== undefined;
  if (route.kind === 'ignore') {
    if (contradicted) return finish('CONTRADICTED', { reason: route.reason, contradiction: route.contradiction });
    return finish('IGNORED', { reason: route.reason });
  }
  try {
    const handle = deps.temporal.workflow.getHandle(route.workflowId);
    if (route.signal === 'transferEvent') await handle.signal(transferEventSignal, route.payload);
    else await handle.signal(paymentEventSignal, route.payload);
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
    // The target has finished: its outcome is final and this late event cannot move it.
    if (contradicted) return finish('CONTRADICTED', { reason: `${route.workflowId} has finished`, contradiction: route.contradiction, route });
    return finish('IGNORED', { reason: `${route.workflowId} has finished`, route });
  }
  if (contradicted) {
    return finish('CONTRADICTED', { contradiction: route.contradiction, signalled: route.workflowId, signal: route.signal, status: route.payload.status });
  }
  return finish('PROCESSED', { signalled: route.workflowId, signal: route.signal });
}
