import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { claimPosBatch, finishPosBatch, releasePosBatch } from '../../db/b2b.ts';
import { databaseOutageOf } from '../../db/pool.ts';
import { getRedemption } from '../../db/redemptions.ts';
import { b2bPlans } from '../../src/b2b/plans.ts';
import { DomainError, isDomainError, type ErrorCode } from '../../src/errors.ts';
import { plcJsonSchema, redeemAuthorizationFromJson } from '../../src/protocol/index.ts';
import { payoutRailOf } from '../../src/settlement/payout-destination.ts';
import { redeemAuthorizationInput } from '../schemas/redemption.ts';
import { credentialRateLimit, decorateApiCaller, requireSignedRequest, type ApiCaller } from '../api-signature.ts';
import { errorResponse, standardErrors } from '../schemas/common.ts';
import { examplePlcTransferred, exampleRedeemAuthorization } from '../schemas/examples.ts';
import { deviceIdSchema } from '../schemas/plc.ts';
import { temporalOutageOf } from '../../services/temporal.ts';
import { exampleSignatureHeaders, signatureHeadersSchema, signedSecurity } from './b2b.ts';
import { parsePlc } from './plc.ts';
import { toRedemptionResponse } from './redeem.ts';

/**
 * `POST /api/v1/pos/sync` (docs/b2b.md, "POS batch sync"): a point-of-sale terminal uploads the
 * PLCs it took offline. Each item goes through the transfer registration and, when it carries a
 * redeem authorisation, the redemption intake: the same services the transfer and redeem routes
 * call (services/transfer.ts, services/redemption.ts), item by item, so one bad item is refused
 * alone. The batch id makes the whole call idempotent per customer (pos_batches).
 */

/** The largest batch any plan takes: the schema's bound; the plan's own is checked after. */
export const posBatchHardMax = Math.max(...Object.values(b2bPlans).map((plan) => plan.posBatchMax));
/** A batch of the largest size with PLCs of a few hops each fits. */
export const posBodyLimitBytes = 4 * 1024 * 1024;
/** Items run at once: enough for the transfer appends to share group commits, few enough to leave the pool room. */
const itemConcurrency = 16;

const itemSchema = z.strictObject({
  plc: plcJsonSchema.optional(),
  transport: z.string().min(1).max(16_384).optional(),
  redeem: z.strictObject({ authorization: redeemAuthorizationInput }).optional(),
});

const itemError = z.object({
  stage: z.enum(['parse', 'register', 'redeem']),
  code: z.string(),
  message: z.string(),
  details: z.record(z.string(), z.unknown()).optional(),
  retryable: z.boolean().describe('a dependency failed, not the item: the batch was not stored, send it again with the same batch id'),
});

const itemResult = z.object({
  index: z.number().int(),
  token_id: z.string().nullable(),
  status: z.enum(['registered', 'redeemed', 'refused']),
  registration: z
    .object({ plc_status: z.string(), chain_length: z.number().int(), bearer_pubkey: z.string(), head_hash: z.string(), appended: z.number().int() })
    .nullable(),
  redemption: z.object({ redemption_id: z.string().uuid(), status: z.string(), status_url: z.string() }).nullable(),
  error: itemError.nullable(),
});
type ItemResult = z.infer<typeof itemResult>;

const syncResponse = z.object({
  batch_id: z.string(),
  customer_id: z.string().uuid(),
  stored: z.boolean().describe('false when an item hit a dependency failure: nothing stored, the same batch id may be sent again'),
  replayed: z.boolean().describe('true when this is the stored answer of an earlier call with this batch id and body'),
  counts: z.object({ registered: z.number().int(), redeemed: z.number().int(), refused: z.number().int() }),
  items: z.array(itemResult),
});
type SyncResponse = z.infer<typeof syncResponse>;

/** Codes that say a dependency failed rather than the item: the batch is not stored. */
const retryableCodes = new Set<ErrorCode>(['DEPENDENCY_TIMEOUT', 'DEPENDENCY_UNAVAILABLE', 'SERVICE_UNAVAILABLE', 'GATEWAY_UNAVAILABLE', 'CONFLICT']);

/** A redemption id derived from the batch and the item, so a rerun of a stored-nothing batch finds the redemption it opened. */
function itemRedemptionId(customerId: string, batchId: string, bodyHash: Buffer, index: number): string {
  const hex = createHash('sha256').update(`pos|${customerId}|${batchId}|${bodyHash.toString('hex')}|${index}`).digest('hex');
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

function itemFailure(index: number, tokenId: string | null, stage: 'parse' | 'register' | 'redeem', error: unknown, registration: ItemResult['registration']): ItemResult {
  const refused = (failure: ItemResult['error']): ItemResult => ({ index, token_id: tokenId, status: 'refused', registration, redemption: null, error: failure });
  if (isDomainError(error)) {
    return refused({ stage, code: error.code, message: error.message, ...(error.details === undefined ? {} : { details: error.details }), retryable: retryableCodes.has(error.code) });
  }
  const outage = databaseOutageOf(error) ?? temporalOutageOf(error);
  return refused({
    stage,
    code: outage === null ? 'INTERNAL' : outage === 'timeout' ? 'DEPENDENCY_TIMEOUT' : 'DEPENDENCY_UNAVAILABLE',
    message: outage === null ? 'an unexpected error; the log has it' : 'a dependency did not answer',
    retryable: true,
  });
}

export async function posRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool, config } = app.deps;
  decorateApiCaller(app);

  async function runItem(request: FastifyRequest, caller: ApiCaller, batch: { batchId: string; bodyHash: Buffer; deviceId: string }, raw: unknown, index: number): Promise<ItemResult> {
    const field = `items.${index}`;
    const failure = (index: number, tokenId: string | null, stage: 'parse' | 'register' | 'redeem', error: unknown, registration: ItemResult['registration'] = null) => {
      if (!isDomainError(error)) request.log.error({ err: error, batch_id: batch.batchId, index }, 'pos item failed on a dependency or unexpectedly');
      return itemFailure(index, tokenId, stage, error, registration);
    };
    const parsed = itemSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return failure(index, null, 'parse', new DomainError('PLC_INVALID', `item ${index}: ${issue?.message ?? 'malformed'}`, { field, path: issue?.path.map(String) ?? [] }));
    }
    const item = parsed.data;
    let plc;
    try {
      if ((item.plc === undefined) === (item.transport === undefined)) throw new DomainError('PLC_INVALID', 'send exactly one of plc or transport', { field });
      plc = parsePlc(item.plc, item.transport);
    } catch (error) {
      return failure(index, item.plc?.token_id ?? null, 'parse', error);
    }
    const tokenId = plc.commitment.tokenId;
    let registration: ItemResult['registration'];
    try {
      const registered = await app.services.transfers.registerTransfers({ plc, field: `${field}.${item.plc === undefined ? 'transport' : 'plc'}`, deviceId: batch.deviceId, route: 'pos' });
      registration = {
        plc_status: registered.status,
        chain_length: registered.chain_length,
        bearer_pubkey: registered.bearer_pubkey,
        head_hash: registered.head_hash,
        appended: registered.appended,
      };
    } catch (error) {
      return failure(index, tokenId, 'register', error);
    }
    if (item.redeem === undefined) return { index, token_id: tokenId, status: 'registered', registration, redemption: null, error: null };
    const a = item.redeem.authorization;
    try {
      if (a.destination !== caller.pixKey) {
        throw new DomainError('POS_DESTINATION_MISMATCH', "a POS redemption pays the customer's own Pix key", { field: `${field}.redeem.authorization.destination` });
      }
      const redemptionId = itemRedemptionId(caller.customerId, batch.batchId, batch.bodyHash, index);
      // A rerun of a batch that stored nothing (a dependency failed) finds what it opened.
      const row = (await getRedemption(pool, redemptionId)) ?? (await openRedemption(request, plc, a, `${field}.plc`, batch.deviceId, redemptionId));
      const view = toRedemptionResponse(row);
      return { index, token_id: tokenId, status: 'redeemed', registration, redemption: { redemption_id: view.redemption_id, status: view.status, status_url: view.status_url }, error: null };
    } catch (error) {
      return failure(index, tokenId, 'redeem', error, registration);
    }
  }

  function openRedemption(_request: FastifyRequest, plc: ReturnType<typeof parsePlc>, a: z.infer<typeof redeemAuthorizationInput>, field: string, deviceId: string, redemptionId: string) {
    const rail = payoutRailOf(a.settlement_rail, `${field.replace(/\.plc$/, '')}.redeem.authorization.settlement_rail`, { signed: true });
    const authorization = redeemAuthorizationFromJson({ ...a, settlement_rail: rail });
    return app.services.redemptions.openRedemption({ plc, authorization, field, route: 'pos', deviceId, redemptionId });
  }

  routes.post(
    '/sync',
    {
      bodyLimit: posBodyLimitBytes,
      preValidation: requireSignedRequest(app, 'pos:sync'),
      schema: {
        tags: ['pos'],
        summary: 'Signed (scope pos:sync): a terminal uploads the PLCs it took offline; each registered, and redeemed when it carries a redeem authorisation',
        description:
          "A batch of PLCs with their chains (the JSON form, `plc`, or the compact QR text, `transport`; docs/protocol.md), at most the plan's `pos_batch_max` (422 `POS_BATCH_TOO_LARGE`). Each item is registered through the transfer registration of `POST /api/v1/transfer/` and, with `redeem.authorization` (signed by the PLC's bearer, the terminal), redeemed through the redemption intake of `POST /api/v1/redeem/` to the customer's own Pix key (else `POS_DESTINATION_MISMATCH`). Each item gets its own result: `registered`, `redeemed`, or `refused` with the stage, the stable code and its details (a fork: `DOUBLE_SPEND_DETECTED` with both records as evidence); one bad item never fails the others. `batch_id` makes the whole call idempotent: the same id with the same body answers the stored result (`replayed: true`) and does nothing again; with another body 409 `POS_BATCH_CONFLICT`; while the first call runs 409 `POS_BATCH_IN_PROGRESS`. When an item meets a dependency failure (its `retryable: true`), nothing is stored (`stored: false`) and the same batch may be sent again: registrations are idempotent and each redemption has an id derived from the batch, so nothing is booked twice (docs/b2b.md).",
        security: signedSecurity,
        headers: signatureHeadersSchema.extend({ 'x-device-id': deviceIdSchema.optional().describe('the terminal; the key id when left out') }),
        body: z.strictObject({
          batch_id: z.string().regex(/^[A-Za-z0-9_.:-]{1,100}$/).describe("the terminal's id for this upload: the same id answers the stored result"),
          items: z.array(z.unknown()).min(1).max(posBatchHardMax).describe('each { plc | transport, redeem?: { authorization } }; checked one by one'),
        }),
        requestExample: {
          headers: exampleSignatureHeaders,
          body: { batch_id: 'terminal-7-2026-11-24', items: [{ plc: examplePlcTransferred, redeem: { authorization: exampleRedeemAuthorization } }] },
        },
        response: { 200: syncResponse, 409: errorResponse, ...standardErrors },
      },
      config: credentialRateLimit('pos', config.RATE_LIMIT_B2B_PER_MINUTE),
    },
    async (request): Promise<SyncResponse> => {
      const caller = request.apiCaller!;
      const { batch_id: batchId, items } = request.body;
      const max = b2bPlans[caller.planId].posBatchMax;
      if (items.length > max) throw new DomainError('POS_BATCH_TOO_LARGE', `the ${caller.planId} plan takes at most ${max} items a batch`, { field: 'items', max });
      const deviceHeader = request.headers['x-device-id'];
      const deviceId = typeof deviceHeader === 'string' ? deviceHeader : caller.keyId;
      const bodyHash = createHash('sha256').update(JSON.stringify(request.body)).digest();
      const claim = await claimPosBatch(pool, { customerId: caller.customerId, batchId, bodyHash, keyId: caller.keyId, itemCount: items.length, staleSeconds: config.POS_BATCH_STALE_SECONDS });
      if (!claim.claimed) {
        if (!claim.row.body_hash.equals(bodyHash)) throw new DomainError('POS_BATCH_CONFLICT', 'this batch id was used with another body', { batch_id: batchId });
        if (claim.row.status !== 'DONE') throw new DomainError('POS_BATCH_IN_PROGRESS', 'the first call with this batch id is still running; retry shortly', { batch_id: batchId });
        return { ...(claim.row.result as SyncResponse), replayed: true };
      }
      let results: ItemResult[];
      try {
        results = new Array<ItemResult>(items.length);
        let next = 0;
        const worker = async () => {
          for (let index = next++; index < items.length; index = next++) {
            results[index] = await runItem(request, caller, { batchId, bodyHash, deviceId }, items[index], index);
          }
        };
        await Promise.all(Array.from({ length: Math.min(itemConcurrency, items.length) }, worker));
      } catch (error) {
        await releasePosBatch(pool, caller.customerId, batchId).catch(() => {});
        throw error;
      }
      const counts = { registered: 0, redeemed: 0, refused: 0 };
      for (const result of results) counts[result.status] += 1;
      const stored = results.every((result) => result.error?.retryable !== true);
      const answer: SyncResponse = { batch_id: batchId, customer_id: caller.customerId, stored, replayed: false, counts, items: results };
      if (stored) await finishPosBatch(pool, caller.customerId, batchId, answer);
      else await releasePosBatch(pool, caller.customerId, batchId);
      request.log.info({ customer_id: caller.customerId, batch_id: batchId, ...counts, stored }, 'pos batch synced');
      return answer;
    },
  );
}
