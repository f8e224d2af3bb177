import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { createSimulator, type Simulator } from '../../simulator/app.ts';
import { buildBoleto } from '../../simulator/documents.ts';
import { signFeeConsent } from '../../src/fees/consent.ts';
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
import type { TestWallet } from './wallet.ts';

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

export function redeemBody(plc: Plc, bearer: TestWallet, pixKey: string, timestampMs: number = Date.now(), rail: 'pix' | 'boleto' = 'pix') {
  if (bytesToHex(currentBearer(plc)) !== bearer.pubkey) throw new Error('redeemBody: not the bearer');
  const authorization = signRedeem(
    { tokenId: plc.commitment.tokenId, headHash: chainHeadHash(plc), settlementRail: rail, destination: pixKey, timestampMs },
    bearer.keys.secretKey,
  );
  return { plc: plcToJson(plc), authorization: redeemAuthorizationToJson(authorization) };
}

/** The bearer's signed consent to a fee schedule version (a boleto redemption costs a fee: docs/limits-and-fees.md). */
export function feeConsentBody(wallet: TestWallet, version: number = 1) {
  const signed = signFeeConsent({ deviceId: 'phone-fees', scheduleVersion: version, operationTimestampMs: Date.now() }, wallet.keys.secretKey);
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
