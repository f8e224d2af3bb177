import { defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ChargeState, OpenChargeInput } from '../activities/charges.ts';

/** The update that opens a charge (`charge-<charge_id>`, workflows/charge.ts): the API starts the workflow with it. */
export const createChargeUpdate = defineUpdate<ChargeState, [OpenChargeInput]>('createCharge');

/**
 * The signal a charge workflow (`charge-<charge_id>`) receives for each payment event of its
 * gateway charge, from the webhook processor or from reconciliation. Delivered possibly late,
 * twice or out of order: the workflow applies a status only when it moves forward.
 */
export const paymentEventSignal = defineSignal<[{ eventId: string; paymentId: string; status: string }]>('paymentEvent');
