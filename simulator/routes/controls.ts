import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { wireValueFromMinor } from '../../gateway/money.ts';
import { wireMoney } from '../../gateway/wire.ts';
import { faultsPatchSchema, type FaultInjector } from '../faults.ts';
import type { GatewayState } from '../gateway-state.ts';
import type { WebhookDispatcher } from '../webhook-queue.ts';
import { parseBody } from './api.ts';

/**
 * Simulator controls under /sim: what a payer, a bank or chaos would do. No API key: the
 * simulator is a development tool that listens on 127.0.0.1 by default. Documented in
 * docs/gateway-wire-api.md, "Simulator controls".
 */

export interface ControlRoutesOptions {
  state: GatewayState;
  dispatcher: WebhookDispatcher;
  faults: FaultInjector;
  reset: () => Promise<void>;
}

const failBody = z.object({ reason: z.string().min(1).max(500).default('Pix key not found at the receiving institution') });
const billFailBody = z.object({ reason: z.string().min(1).max(500).default('the boleto is already paid or no longer payable') });
const balanceBody = z.object({ value: wireMoney });
const stateQuery = z.object({ limit: z.coerce.number().int().min(1).max(1_000).default(100) });

export async function controlRoutes(app: FastifyInstance, options: ControlRoutesOptions): Promise<void> {
  const { state, dispatcher, faults } = options;

  app.post<{ Params: { id: string } }>('/payments/:id/pay', async (request) => ({ payment: state.payPayment(request.params.id) }));
  app.post<{ Params: { id: string } }>('/payments/:id/overdue', async (request) => ({ payment: state.overduePayment(request.params.id) }));
  app.post<{ Params: { id: string } }>('/payments/:id/refund', async (request) => ({ payment: state.refundPayment(request.params.id) }));

  app.post<{ Params: { id: string } }>('/transfers/:id/complete', async (request) => ({ transfer: state.completeTransfer(request.params.id) }));
  app.post<{ Params: { id: string } }>('/transfers/:id/fail', async (request) => {
    const body = parseBody(failBody, request.body ?? {});
    return { transfer: state.failTransfer(request.params.id, body.reason) };
  });

  app.post<{ Params: { id: string } }>('/bill-payments/:id/complete', async (request) => ({ bill: state.completeBillPayment(request.params.id) }));
  app.post<{ Params: { id: string } }>('/bill-payments/:id/fail', async (request) => {
    const body = parseBody(billFailBody, request.body ?? {});
    return { bill: state.failBillPayment(request.params.id, body.reason) };
  });
  app.post<{ Params: { id: string } }>('/bill-payments/:id/cancel', async (request) => ({ bill: state.cancelBillPayment(request.params.id) }));

  app.get('/faults', async () => ({ faults: faults.faults, seed: faults.seed }));
  app.post('/faults', async (request) => {
    const patch = parseBody(faultsPatchSchema, request.body);
    return { faults: faults.update(patch), seed: faults.seed };
  });
  app.delete('/faults', async () => {
    faults.reset();
    return { faults: faults.faults, seed: faults.seed };
  });

  app.post('/balance', async (request) => {
    const body = parseBody(balanceBody, request.body);
    state.setBalance(body.value);
    return { balance: wireValueFromMinor(state.balanceMinor) };
  });

  app.get('/state', async (request) => {
    const { limit } = stateQuery.parse(request.query);
    return {
      ...state.snapshot(limit),
      webhooks: dispatcher.list(),
      queues: dispatcher.queues(),
      deliveries: dispatcher.log(limit),
      faults: faults.faults,
      seed: faults.seed,
    };
  });

  app.post('/reset', async () => {
    await options.reset();
    return { reset: true };
  });
}
