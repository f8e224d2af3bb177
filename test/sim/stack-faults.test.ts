import { describe, expect, it } from 'vitest';
import { startStack } from '../../scripts/chaos/stack.ts';

/**
 * The two faults the simulation adds to the chaos stack (issue 35): SIGKILL of the API alone and of
 * the gateway simulator (run as a process with its state in a SQLite file), each started again. The
 * API answers again afterwards with the worker untouched, and the gateway still holds what it
 * answered before the kill.
 */
describe('the chaos stack with the simulator as a process', () => {
  it('kills the API alone and the gateway simulator with SIGKILL and starts them again on their state', { timeout: 300_000 }, async () => {
    const lines: string[] = [];
    const stack = await startStack({ ports: 'free', seed: 35, log: (line) => lines.push(line), simulatorMode: 'process' });
    try {
      expect(() => stack.simulator).toThrow(/runs as a process/);
      const before = await stack.gateway.createTransfer({ value: 12.5, pixAddressKey: 'payee@example.com', pixAddressKeyType: 'EMAIL', description: 'stack test', externalReference: 'stack-test-1' });
      await stack.killSimulator();
      const after = await stack.gateway.transfers({ externalReference: 'stack-test-1' });
      expect(after.map((t) => t.id)).toEqual([before.id]);

      const health = async () => (await fetch(`${stack.apiUrl}/readyz`)).status;
      expect(await health()).toBe(200);
      await stack.killApi();
      expect(await health()).toBe(200);
      // The worker was left alone: a deposit (a workflow the worker runs) still books.
      const login = await fetch(`${stack.apiUrl}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(stack.admin) });
      const { access_token: token } = (await login.json()) as { access_token: string };
      const deposit = await fetch(`${stack.apiUrl}/api/v1/balance/deposit`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'idempotency-key': crypto.randomUUID() },
        body: JSON.stringify({ owner_id: 'a'.repeat(64), amount: '1.00', currency: 'BRL' }),
      });
      expect(deposit.status, lines.join('\n')).toBe(200);
    } finally {
      await stack.stop();
    }
  });
});
