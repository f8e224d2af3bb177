import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { createSimulator, type Simulator } from '../../simulator/app.ts';
import { buildBoleto } from '../../simulator/documents.ts';
import type { OpenRedemptionInput } from '../../activities/redemption.ts';
import { signFeeConsent } from '../../src/fees/consent.ts';
import { fromTransferRecord } from '../../src/plc/register-transfers.ts';
import { freePort } from '../../infra/temporal-dev-server.ts';
import {
  bytesToHex,
  chainHeadHash,
  currentBearer,
  plcToJson,
  redeemAuthorizationToJson,
  signRedeem,
  type Plc,
} from '../../src/protocol/index.ts';
import { createTestApp, type TestApp, type TestAppOptions } from './app.ts';
import { hop, newWallet, type TestWallet } from './wallet.ts';

/**
 * The service listening on a real port, the gateway simulator beside it, and each pointed at the
 * other: what the end-to-end settlement tests run against.
 */
export interface SettlementHarness {
  t: TestApp;
  simulator: Simulator;
  appUrl: string;
  admin: Record<string, string>;
  close(): Promise<void>;
}

export async function startSettlementHarness(
  overrides: Record<string, string> = {},
  simulatorOptions: Parameters<typeof createSimulator>[0] = {},
  options: {
    inProcessWorker?: boolean;
    /** Called before the app listens: a test adds its own hooks here (a fault injected into the service). */
    beforeListen?: (app: FastifyInstance) => void;
    /** How the app and its workers are built (test/support/app.ts). */
    testApp?: TestAppOptions;
  } = {},
): Promise<SettlementHarness> {
  const simulatorPort = await freePort();
  const webhookToken = `test-token-${randomUUID()}`;
  const t = await createTestApp({
    GATEWAY_BASE_URL: `http://127.0.0.1:${simulatorPort}`,
    GATEWAY_API_KEY: 'test-api-key',
    GATEWAY_WEBHOOK_TOKEN: webhookToken,
    GATEWAY_TIMEOUT_MS: '2000',
    REDEMPTION_WEBHOOK_WAIT_MS: '3000',
    RATE_LIMIT_PLC_PER_MINUTE: '100000',
    RATE_LIMIT_TRANSFER_PER_MINUTE: '100000',
    RATE_LIMIT_REDEEM_PER_MINUTE: '100000',
    ...overrides,
  }, options.testApp);
  if (options.inProcessWorker !== false) await t.startWorker();
  options.beforeListen?.(t.app);
  const appUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
  const simulator = await createSimulator({
    host: '127.0.0.1',
    port: simulatorPort,
    apiKey: 'test-api-key',
    webhookUrl: `${appUrl}/api/v1/redemption/webhook/gateway`,
    validationUrl: `${appUrl}/api/v1/webhooks/transfer/validate`,
    webhookToken,
    validationDelayMs: 100,
    webhookRetryBaseMs: 50,
    webhookRetryMaxMs: 500,
    seed: 42,
    ...simulatorOptions,
  });
  await simulator.listen();
  const admin = await t.adminHeaders();
  return {
    t,
    simulator,
    appUrl,
    admin,
    async close() {
      // The worker first, while the gateway still answers: a webhook still being routed reads
      // the gateway (services/gateway-word.ts) and would otherwise retry against a closed port.
      await t.stopWorkers();
      await simulator.close();
      await t.close();
    },
  };
}

/**
 * Webhook ids for a test file's own simulator (its `webhookIdSuffix`): the cooldown workflows are
 * named by them, on a dev server other files share.
 */
export function ownWebhookIds(): { suffix: string; gatewayHook: string; transferHook: string } {
  const suffix = `_${randomUUID().slice(0, 8)}`;
  return { suffix, gatewayHook: `wh_gateway${suffix}`, transferHook: `wh_transfer${suffix}` };
}

/**
 * A `beforeListen` hook: while `failing()` holds, the service's gateway webhook endpoint answers
 * 503, as a service in trouble would, so the gateway backs off and, in time, interrupts the webhook.
 */
export function failGatewayWebhooksWhile(failing: () => boolean): (app: FastifyInstance) => void {
  return (app) => {
    app.addHook('onRequest', async (request, reply) => {
      if (failing() && request.url.startsWith('/api/v1/redemption/webhook/gateway')) {
        return reply.code(503).send({ code: 'SERVICE_UNAVAILABLE', message: 'fault injected by the test' });
      }
      return undefined;
    });
  };
}

/** Delivers `payload` to the service's gateway webhook endpoint with the gateway's token, as the gateway does. */
export function deliverGatewayWebhook(t: TestApp, payload: object) {
  return t.app.inject({ method: 'POST', url: '/api/v1/redemption/webhook/gateway', headers: { 'gateway-access-token': t.config.GATEWAY_WEBHOOK_TOKEN }, payload });
}

export function redeemBody(plc: Plc, bearer: TestWallet, pixKey: string, timestampMs: number = Date.now(), rail: 'pix' | 'boleto' = 'pix') {
  if (bytesToHex(currentBearer(plc)) !== bearer.pubkey) throw new Error('redeemBody: not the bearer');
  const authorization = signRedeem(
    { tokenId: plc.commitment.tokenId, headHash: chainHeadHash(plc), settlementRail: rail, destination: pixKey, timestampMs },
    bearer.keys.secretKey,
  );
  return { plc: plcToJson(plc), authorization: redeemAuthorizationToJson(authorization) };
}

/**
 * The bearer's signed consent to a fee schedule version (a boleto redemption costs a fee:
 * docs/limits-and-fees.md), from device `phone-fees` now unless `options` say otherwise.
 */
export function feeConsentBody(wallet: TestWallet, version: number = 1, options: { deviceId?: string; timestampMs?: number } = {}) {
  const signed = signFeeConsent(
    { deviceId: options.deviceId ?? 'phone-fees', scheduleVersion: version, operationTimestampMs: options.timestampMs ?? Date.now() },
    wallet.keys.secretKey,
  );
  return {
    public_key: wallet.pubkey,
    schedule_version: version,
    device_id: signed.deviceId,
    operation_timestamp: signed.operationTimestampMs,
    device_signature: bytesToHex(signed.signature),
  };
}

/** A redeem body paying the boleto whose digitable line (digits only) the bearer signs. */
export function boletoRedeemBody(plc: Plc, bearer: TestWallet, line: string, timestampMs: number = Date.now()) {
  return redeemBody(plc, bearer, line, timestampMs, 'boleto');
}

/** A valid bank slip's digitable line (47 digits) for this amount in centavos (0: the amount left open). */
export function bankSlipLine(amountMinor: bigint, freeField: string = '1234567890123456789012345'): string {
  return buildBoleto({ amountMinor, dueDate: '2026-12-31', freeField }).identificationField;
}

/** A PLC of `amountMinor` issued from `device` by a new wallet funded with 50.00, and handed on to a new bearer. */
export async function handedOnPlc(t: TestApp, amountMinor: bigint, device: Record<string, string>): Promise<{ plc: Plc; issuer: TestWallet; bearer: TestWallet }> {
  const [issuer, bearer] = [newWallet(), newWallet()];
  await t.deposit(issuer.pubkey, '50.00');
  const plc = await t.issuePlc(issuer, amountMinor, device);
  return { plc: hop(plc, issuer, bearer), issuer, bearer };
}

/**
 * What the redemption workflow hands its openRedemption activity for `chain` (a PLC handed on to
 * `bearer`) presented from `deviceId`: a new redemption id, a payout to an e-mail key, no fee.
 */
export function openRedemptionInput(chain: Plc, bearer: TestWallet, deviceId: string): OpenRedemptionInput {
  return {
    redemptionId: randomUUID(),
    tokenId: chain.commitment.tokenId,
    bearerPubkey: bearer.pubkey,
    headHash: bytesToHex(chainHeadHash(chain)),
    destination: 'payee@example.com',
    destinationType: 'EMAIL',
    deviceId,
    feeMinor: '0',
    presented: chain.transferChain.map(fromTransferRecord),
    expiryGraceMs: 300_000,
  };
}

/** The protocol-level POST /api/v1/settlements body for the same redeem authorisation. */
export function settlementBody(plc: Plc, bearer: TestWallet, pixKey: string, timestampMs: number = Date.now()) {
  const { authorization } = redeemBody(plc, bearer, pixKey, timestampMs);
  return {
    plc_id: plc.commitment.tokenId,
    plc_payload: Buffer.from(JSON.stringify(plcToJson(plc))).toString('base64'),
    settlement_rail: 'pix',
    destination: { pix_key: pixKey },
    bearer_signature: authorization.signature,
    timestamp_ms: authorization.timestamp_ms,
  };
}
