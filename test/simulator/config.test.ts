import { describe, expect, it } from 'vitest';
import { defaultSimulatorConfig, loadSimulatorConfig, SimulatorConfigError } from '../../simulator/config.ts';
import { webhookDefinitionsFromConfig } from '../../simulator/webhook-queue.ts';

describe('simulator configuration', () => {
  it('has the documented defaults', () => {
    expect(defaultSimulatorConfig()).toMatchObject({
      host: '127.0.0.1',
      port: 8010,
      apiKey: 'sim-api-key',
      webhookUrl: 'http://127.0.0.1:8000/api/v1/redemption/webhook/gateway',
      paymentWebhookUrlPix: null,
      paymentWebhookUrlBoleto: null,
      transferWebhookUrl: null,
      validationUrl: 'http://127.0.0.1:8000/api/v1/webhooks/transfer/validate',
      validationDelayMs: 5000,
      validationAttempts: 3,
      autoSettle: true,
      backoffRemovalCooldownMs: 300_000,
      webhookInterruptAfterFailures: 15,
      seed: null,
    });
  });

  it('reads the environment, treating empty strings as unset and "off" as no URL', () => {
    const config = loadSimulatorConfig({
      SIMULATOR_PORT: '0',
      SIMULATOR_AUTO_SETTLE: 'false',
      SIMULATOR_VALIDATION_URL: 'off',
      SIMULATOR_VALIDATION_DELAY_MS: '50',
      SIMULATOR_WEBHOOK_TOKEN: '',
      SIMULATOR_SEED: '42',
      UNRELATED: 'x',
    });
    expect(config).toMatchObject({ port: 0, autoSettle: false, validationUrl: null, validationDelayMs: 50, webhookToken: 'sim-webhook-token', seed: 42 });
  });

  it('names every bad variable', () => {
    let error: unknown;
    try {
      loadSimulatorConfig({ SIMULATOR_PORT: '99999', SIMULATOR_AUTO_SETTLE: 'yes', SIMULATOR_WEBHOOK_URL: 'ftp://x' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SimulatorConfigError);
    const problems = (error as SimulatorConfigError).problems.join('\n');
    expect(problems).toContain('SIMULATOR_PORT');
    expect(problems).toContain('SIMULATOR_AUTO_SETTLE');
    expect(problems).toContain('SIMULATOR_WEBHOOK_URL');
  });

  it('routes events to the override URLs and everything else to the catch-all', () => {
    const hooks = webhookDefinitionsFromConfig({
      webhookUrl: 'http://svc/gateway',
      paymentWebhookUrlPix: 'http://svc/pix',
      paymentWebhookUrlBoleto: null,
      transferWebhookUrl: 'http://svc/transfer',
    });
    const route = (event: 'PAYMENT_RECEIVED' | 'TRANSFER_DONE', billingType: 'PIX' | 'BOLETO' | null): string[] =>
      hooks.filter((hook) => hook.accepts(event, billingType)).map((hook) => hook.id);
    expect(route('PAYMENT_RECEIVED', 'PIX')).toEqual(['wh_payment_pix']);
    expect(route('PAYMENT_RECEIVED', 'BOLETO')).toEqual(['wh_gateway']);
    expect(route('TRANSFER_DONE', null)).toEqual(['wh_transfer']);
  });
});
