import { defineSignal } from '@temporalio/workflow';

/**
 * The signal a charge workflow (`charge-<charge_id>`) receives for each payment event of its
 * gateway charge, from the webhook processor or from reconciliation. Delivered possibly late,
 * twice or out of order: the workflow applies a status only when it moves forward.
 */
export const paymentEventSignal = defineSignal<[{ eventId: string; paymentId: string; status: string }]>('paymentEvent');
