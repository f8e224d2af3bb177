import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../../simulator/app.ts';
import { createRng } from '../../simulator/rng.ts';
import { control } from '../gateway/receiver.ts';

/** Fault injection is deterministic for a seed; the controls and the API's auth behave as documented. */

const apiKey = 'faults-test-key';
let simulator: Simulator;
let baseUrl: string;

async function statuses(count: number): Promise<number[]> {
  const result: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const response = await fetch(`${baseUrl}/v3/finance/balance`, { headers: { access_token: apiKey } });
    await response.body?.cancel();
    result.push(response.status);
  }
  return result;
}

beforeAll(async () => {
  simulator = await createSimulator({ port: 0, apiKey, webhookUrl: null, validationUrl: null, seed: 99 });
  baseUrl = await simulator.listen();
});

afterAll(async () => {
  await simulator.close();
});

describe('simulator faults and controls', () => {
  it('the generator repeats for a seed and differs across seeds', () => {
    const draw = (seed: number): number[] => {
      const rng = createRng(seed);
      return Array.from({ length: 5 }, () => rng.next());
    };
    expect(draw(1)).toEqual(draw(1));
    expect(draw(1)).not.toEqual(draw(2));
    expect(draw(3).every((x) => x >= 0 && x < 1)).toBe(true);
  });

  it('injects the same API errors for the same seed', async () => {
    await control(baseUrl, 'POST', '/sim/faults', { apiErrorRate: 0.5, seed: 2024 });
    const first = await statuses(20);
    await control(baseUrl, 'POST', '/sim/faults', { seed: 2024 });
    const second = await statuses(20);
    expect(second).toEqual(first);
    expect(first).toContain(500);
    expect(first).toContain(200);
    const cleared = await control(baseUrl, 'DELETE', '/sim/faults');
    expect(cleared).toMatchObject({ faults: { apiErrorRate: 0 }, seed: 99 });
    expect(await statuses(5)).toEqual([200, 200, 200, 200, 200]);
  });

  it('refuses unknown or out-of-range faults', async () => {
    for (const body of [{ apiErrorRate: 2 }, { duplicateWebhooks: 0 }, { teleport: true }]) {
      const response = await fetch(`${baseUrl}/sim/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ errors: [{ code: expect.stringMatching(/^invalid_/) }] });
    }
  });

  it('requires the API key on /v3 but not on /sim or /health', async () => {
    expect((await fetch(`${baseUrl}/v3/webhooks`)).status).toBe(401);
    expect((await fetch(`${baseUrl}/v3/webhooks`, { headers: { access_token: 'nope' } })).status).toBe(401);
    expect((await fetch(`${baseUrl}/sim/state`)).status).toBe(200);
    expect(await (await fetch(`${baseUrl}/health`)).json()).toEqual({ status: 'ok' });
  });

  it('answers malformed and inexact JSON with the gateway error shape', async () => {
    const post = (text: string) =>
      fetch(`${baseUrl}/v3/customers`, { method: 'POST', headers: { access_token: apiKey, 'content-type': 'application/json' }, body: text });
    const malformed = await post('{"name":');
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ errors: [{ code: 'invalid_json' }] });
    const noName = await post('{"externalReference":"x"}');
    expect(await noName.json()).toMatchObject({ errors: [{ code: 'invalid_name' }] });
    const badCpf = await post('{"name":"A","cpfCnpj":"12345678900"}');
    expect(await badCpf.json()).toMatchObject({ errors: [{ code: 'invalid_cpfCnpj' }] });
    const customer = (await (await post('{"name":"A"}')).json()) as { id: string };
    const inexact = await fetch(`${baseUrl}/v3/payments`, {
      method: 'POST',
      headers: { access_token: apiKey, 'content-type': 'application/json' },
      body: `{"customer":"${customer.id}","billingType":"PIX","value":10.000000000000000001,"dueDate":"2099-01-01"}`,
    });
    expect(inexact.status).toBe(400);
    expect(await inexact.json()).toMatchObject({ errors: [{ code: 'invalid_value' }] });
    const threeDecimals = await fetch(`${baseUrl}/v3/payments`, {
      method: 'POST',
      headers: { access_token: apiKey, 'content-type': 'application/json' },
      body: `{"customer":"${customer.id}","billingType":"PIX","value":10.001,"dueDate":"2099-01-01"}`,
    });
    expect(await threeDecimals.json()).toMatchObject({ errors: [{ code: 'invalid_value' }] });
  });

  it('reset forgets every resource and idempotency key', async () => {
    const create = () =>
      fetch(`${baseUrl}/v3/customers`, {
        method: 'POST',
        headers: { access_token: apiKey, 'content-type': 'application/json', 'Idempotency-Key': 'same-key' },
        body: '{"name":"Reset"}',
      }).then(async (r) => ({ replayed: r.headers.get('x-idempotency-replayed'), body: (await r.json()) as { id: string } }));
    const first = await create();
    const replay = await create();
    expect(replay.body.id).toBe(first.body.id);
    expect(replay.replayed).toBe('true');
    await control(baseUrl, 'POST', '/sim/reset');
    const state = await control(baseUrl, 'GET', '/sim/state');
    expect(state.counts).toEqual({ customers: 0, payments: 0, transfers: 0, billPayments: 0, idempotencyKeys: 0 });
    const afterReset = await create();
    expect(afterReset.body.id).not.toBe(first.body.id);
  });
});
