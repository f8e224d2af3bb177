import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { getLimitRequest, issuedLast24h, listDeviceLimitRequests, listDeviceOwners, listPendingLimitRequests, type LimitRequestRow } from '../../db/plc-limits.ts';
import { loggedOperation } from '../../db/operation-log.ts';
import type { Pool } from '../../db/pool.ts';
import { recordAuthorization, releaseAuthorization } from '../../db/used-authorizations.ts';
import { limitIncreaseAuthorizationHash, verifyLimitIncrease } from '../../src/limits/increase-request.ts';
import { hexToBytes } from '../../src/protocol/bytes.ts';
import { ceilingsOf, deviceLimits } from '../../services/plc-limits.ts';
import { DomainError } from '../../src/errors.ts';
import { checkIncreaseRequest, increaseRequestRoute, type Ceilings } from '../../src/limits/progressive.ts';
import { formatAmount } from '../../src/money/currency.ts';
import { reputationTierNames } from '../../src/reputation/rules.ts';
import { workflowIds } from '../../workflows/ids.ts';
import type { limitReviewWorkflow } from '../../workflows/limit-review.ts';
import { decideLimitRequestUpdate, openLimitRequestUpdate } from '../../workflows/limit-review-messages.ts';
import { businessStatusKey, deviceIdKey, ownerIdKey, referenceIdKey } from '../../workflows/search-attributes.ts';
import { deviceRateLimit } from '../device-id.ts';
import { exampleLimitIncrease, examplePubkeys } from '../schemas/examples.ts';
import { operationTimestampSchema, signatureSchema } from '../schemas/security.ts';
import { adminErrors, errorResponse, standardErrors } from '../schemas/common.ts';
import { idempotencyKeyHeader } from '../schemas/ledger.ts';
import { amountInputSchema, amountSchema, parseMoney } from '../schemas/money.ts';
import { deviceIdSchema, pubkeySchema } from '../schemas/plc.ts';
import { withDomainErrors } from '../../services/temporal.ts';

/**
 * Progressive PLC limits (docs/limits-and-fees.md, "Progressive limits"): a device's limits, an
 * increase request (reviewed by an admin through `limit-review-<request_id>`), the review queue
 * and the decision.
 */

/** Limits count minor units of the PLC's own currency; every supported currency has 2 decimals, so one decimal form serves all. */
function decimal(amountMinor: bigint): string {
  return formatAmount(amountMinor, 'BRL');
}
function parseLimitAmount(amount: string | number, field: string): bigint {
  return parseMoney(amount, 'BRL', { positive: true, field });
}

const exampleDevice = 'device-7f3a9c';
const limitPair = z.object({ max_amount: amountSchema, daily_limit: amountSchema });

const deviceLimitsResponse = z
  .object({
    device_id: z.string(),
    owner_id: z
      .string()
      .nullable()
      .describe("the device's owner: the issuer of its latest PLC, or the owner_id asked for; null for a device that never registered a PLC asked about without owner_id"),
    registered: z
      .boolean()
      .describe('false: the device never registered a PLC (for this owner); the limits are those that would apply to its first one: the owner\'s tier and volume without an override, or without owner_id those of an owner without any history'),
    tier: z.enum(reputationTierNames),
    score: z.number().int(),
    settled_volume: amountSchema,
    max_amount: amountSchema.describe('what one PLC of this device and owner may carry'),
    daily_limit: amountSchema.describe('what the owner may promise over 24 hours, per currency'),
    source: z.enum(['TIER', 'OVERRIDE']),
    automatic: limitPair.describe("the tier's limits (with the volume bonus), before any override"),
    ceiling: limitPair.describe('PLC_MAX_AMOUNT_MINOR and PLC_DAILY_LIMIT_MINOR: the PREMIUM tier, and the most any override grants'),
    override: z
      .object({ request_id: z.string().uuid(), max_amount: amountSchema, daily_limit: amountSchema, ends_at: z.string() })
      .nullable(),
    usage: z.array(z.object({ currency: z.string(), issued_last_24h: amountSchema, remaining: amountSchema })),
    other_owners: z.array(z.object({ owner_id: z.string(), plcs: z.number().int(), last_registered_at: z.string() })),
    increase_request: z.string(),
  })
  .meta({ id: 'PLCLimitsResponse' });
type DeviceLimitsResponse = z.infer<typeof deviceLimitsResponse>;

const limitRequestResponse = z
  .object({
    request_id: z.string().uuid(),
    device_id: z.string(),
    owner_id: z.string(),
    status: z.enum(['PENDING', 'APPROVED', 'REJECTED', 'EXPIRED']),
    requested: limitPair,
    current: limitPair.describe('the limits the device had when it asked'),
    tier: z.enum(reputationTierNames),
    reason: z.string(),
    workflow_id: z.string(),
    created_at: z.string(),
    review_deadline_at: z.string(),
    decided_at: z.string().nullable(),
    decided_by: z.string().nullable(),
    decision_note: z.string().nullable(),
    granted: limitPair.nullable(),
    override_ends_at: z.string().nullable(),
  })
  .meta({ id: 'PLCLimitRequestResponse' });

function toLimitRequest(row: LimitRequestRow): z.infer<typeof limitRequestResponse> {
  return {
    request_id: row.request_id,
    device_id: row.device_id,
    owner_id: row.owner_id,
    status: row.status,
    requested: { max_amount: decimal(row.requested_max_amount_minor), daily_limit: decimal(row.requested_daily_limit_minor) },
    current: { max_amount: decimal(row.current_max_amount_minor), daily_limit: decimal(row.current_daily_limit_minor) },
    tier: row.tier,
    reason: row.reason,
    workflow_id: row.workflow_id,
    created_at: row.created_at.toISOString(),
    review_deadline_at: row.review_deadline_at.toISOString(),
    decided_at: row.decided_at?.toISOString() ?? null,
    decided_by: row.decided_by,
    decision_note: row.decision_note,
    granted:
      row.granted_max_amount_minor === null || row.granted_daily_limit_minor === null
        ? null
        : { max_amount: decimal(row.granted_max_amount_minor), daily_limit: decimal(row.granted_daily_limit_minor) },
    override_ends_at: row.override_ends_at?.toISOString() ?? null,
  };
}

/** The device's owner: the one asked for (it must have used the device) or the issuer of its latest PLC. */
async function ownerOfDevice(pool: Pool, deviceId: string, ownerId: string | undefined) {
  const owners = await listDeviceOwners(pool, deviceId, 10);
  const owner = ownerId === undefined ? owners[0] : owners.find((candidate) => candidate.owner_id === ownerId);
  if (owner === undefined) {
    throw new DomainError(
      'DEVICE_NOT_FOUND',
      ownerId === undefined ? 'this device has registered no PLC: it has no owner yet' : 'this device has registered no PLC for this owner',
      { device_id: deviceId },
    );
  }
  return { owner: owner.owner_id, others: owners.filter((candidate) => candidate.owner_id !== owner.owner_id) };
}

/**
 * The limits view of a device. `unknown`: what a device that never registered a PLC (for the owner
 * asked) answers: `'defaults'`, the limits that would apply to it (the public route: a question
 * about what the device may do), or `'refuse'`, 404 `DEVICE_NOT_FOUND` (the admin's view of a
 * device's requests).
 */
async function deviceLimitsView(
  pool: Pool,
  ceilings: Ceilings,
  deviceId: string,
  ownerId: string | undefined,
  unknown: 'defaults' | 'refuse' = 'refuse',
): Promise<DeviceLimitsResponse> {
  let owner: string | null;
  let others: Awaited<ReturnType<typeof ownerOfDevice>>['others'];
  let registered = true;
  try {
    ({ owner, others } = await ownerOfDevice(pool, deviceId, ownerId));
  } catch (error) {
    if (unknown === 'refuse' || !(error instanceof DomainError) || error.code !== 'DEVICE_NOT_FOUND') throw error;
    // Never seen (for this owner): the owner asked for, with its own tier and volume and no
    // override, or without one the limits an owner without any history gets.
    owner = ownerId ?? null;
    others = ownerId === undefined ? [] : (await listDeviceOwners(pool, deviceId, 10)).filter((candidate) => candidate.owner_id !== ownerId);
    registered = false;
  }
  const [{ facts, limits }, usage] = await Promise.all([deviceLimits(pool, ceilings, owner, deviceId), owner === null ? [] : issuedLast24h(pool, owner)]);
  return {
    device_id: deviceId,
    owner_id: owner,
    registered,
    tier: facts.tier,
    score: facts.score,
    settled_volume: decimal(facts.settledVolumeMinor),
    max_amount: decimal(limits.maxAmountMinor),
    daily_limit: decimal(limits.dailyLimitMinor),
    source: limits.source,
    automatic: { max_amount: decimal(limits.automatic.maxAmountMinor), daily_limit: decimal(limits.automatic.dailyLimitMinor) },
    ceiling: { max_amount: decimal(ceilings.maxAmountMinor), daily_limit: decimal(ceilings.dailyLimitMinor) },
    override:
      facts.override === null
        ? null
        : {
            request_id: facts.override.requestId,
            max_amount: decimal(facts.override.maxAmountMinor),
            daily_limit: decimal(facts.override.dailyLimitMinor),
            ends_at: facts.override.endsAt.toISOString(),
          },
    usage: usage.map((row) => ({
      currency: row.currency,
      issued_last_24h: decimal(row.issued_minor),
      remaining: decimal(row.issued_minor >= limits.dailyLimitMinor ? 0n : limits.dailyLimitMinor - row.issued_minor),
    })),
    other_owners: others.map((row) => ({ owner_id: row.owner_id, plcs: Number(row.plcs), last_registered_at: row.last_registered_at.toISOString() })),
    increase_request: increaseRequestRoute,
  };
}

/** The owner named by an increase request whose signature verifies under its key; undefined otherwise. */
function verifiedRequester(body: unknown): string | undefined {
  const parsed = limitIncreaseBody.safeParse(body);
  if (!parsed.success || parsed.data.owner_id === undefined) return undefined;
  try {
    const signed = {
      ownerPublicKey: hexToBytes(parsed.data.owner_id, 32),
      requestedMaxAmountMinor: parseLimitAmount(parsed.data.requested_max_amount, 'requested_max_amount'),
      requestedDailyLimitMinor: parseLimitAmount(parsed.data.requested_daily_limit, 'requested_daily_limit'),
      operationTimestampMs: parsed.data.operation_timestamp,
      deviceId: parsed.data.device_id,
      signature: hexToBytes(parsed.data.device_signature, 64),
    };
    return verifyLimitIncrease(signed) ? parsed.data.owner_id : undefined;
  } catch {
    return undefined;
  }
}

/** Runs `open`; when it refuses with a domain error, the authorisation it was claimed for is released. */
async function releaseWhenRefused<T>(pool: Pool, authorizationHash: string, requestId: string, open: () => Promise<T>): Promise<T> {
  try {
    return await open();
  } catch (error) {
    if (error instanceof DomainError) await releaseAuthorization(pool, authorizationHash, requestId);
    throw error;
  }
}

const deviceParam = z.object({ device_id: deviceIdSchema });
const ownerQuery = z.object({ owner_id: pubkeySchema.optional().describe("which of the device's owners (default: the issuer of its latest PLC)") });

const limitIncreaseBody = z
  .strictObject({
    device_id: deviceIdSchema,
    owner_id: pubkeySchema.optional().describe("the owner the increase is for (default: the issuer of the device's latest PLC); its key signs the request"),
    requested_max_amount: amountInputSchema.describe('the per-PLC limit asked for'),
    requested_daily_limit: amountInputSchema.describe('the 24-hour limit asked for'),
    reason: z.string().trim().min(1).max(1000),
    operation_timestamp: operationTimestampSchema.describe('when the owner signed, ms (within CLOCK_TOLERANCE_MS of now)'),
    device_signature: signatureSchema.describe(
      "the owner's key: Ed25519 over svc:limit-increase:{owner_id}:{requested_max_amount_minor}:{requested_daily_limit_minor}:{operation_timestamp}:{device_id}",
    ),
  })
  .describe('LimitIncreaseBody');

const decisionBody = z
  .strictObject({
    decision: z.enum(['APPROVE', 'REJECT']),
    granted_max_amount: amountInputSchema.optional().describe('approval: the per-PLC limit granted (default: what was asked)'),
    granted_daily_limit: amountInputSchema.optional().describe('approval: the 24-hour limit granted (default: what was asked)'),
    valid_days: z.number().int().min(1).max(365).default(30).describe('approval: how long the override lasts'),
    note: z.string().max(1000).optional(),
  })
  .describe('LimitIncreaseDecisionBody');

/** The public routes: a device's limits and its increase request. */
export async function plcLimitRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool, temporal, config } = app.deps;
  const ceilings = ceilingsOf(config);
  const rateLimit = deviceRateLimit('plc-limits', config.RATE_LIMIT_PLC_PER_MINUTE);
  // The increase request's signing-key dimension: the owner it names, once its signature verifies.
  const increaseRateLimit = deviceRateLimit('plc-limits', config.RATE_LIMIT_PLC_PER_MINUTE, (request) => verifiedRequester(request.body));

  routes.get(
    '/plc/limits/:device_id',
    {
      schema: {
        tags: ['plc'],
        summary: "A device's effective PLC limits (per PLC and per 24 hours), from its owner's reputation and volume",
        description:
          "The limits PLC create applies to this device: its owner's tier (docs/limits-and-fees.md) gives a share of the ceilings `PLC_MAX_AMOUNT_MINOR` and `PLC_DAILY_LIMIT_MINOR`, the daily one raised by 10% of the owner's settled volume; an approved increase request overrides them until its end date. The device's owner is the issuer of its latest PLC (`owner_id` picks another owner that used it; `other_owners` lists them). `usage` says what was promised in the last 24 hours and what is left, per currency. A device that never registered a PLC (for the owner asked) answers the limits that would apply to its first PLC, with `registered: false`: the owner's (`owner_id`) tier and volume without an override, or without `owner_id` those of an owner without any history (`owner_id: null`).",
        params: deviceParam,
        querystring: ownerQuery,
        requestExample: { params: { device_id: exampleDevice }, querystring: { owner_id: examplePubkeys.alice } },
        response: { 200: deviceLimitsResponse, 429: errorResponse, ...standardErrors },
      },
      config: rateLimit,
    },
    async (request) => deviceLimitsView(pool, ceilings, request.params.device_id, request.query.owner_id, 'defaults'),
  );

  routes.post(
    '/plc/limits/increase-request',
    {
      schema: {
        tags: ['plc'],
        summary: 'Ask for PLC limits above the automatic ones: starts an admin review (limit-review-<request_id>)',
        description:
          "Asks for a higher per-PLC and/or 24-hour limit for a device and its owner. The request must ask for more than the device's current limits (else 422 `LIMIT_INCREASE_NOT_NEEDED`) and for nothing above the ceilings (422 `LIMIT_ABOVE_CEILING`). It is stored PENDING and held by the workflow `limit-review-<request_id>` (Temporal UI: `DeviceId`, `OwnerId`, `ReferenceId` = request id) until an admin decides it or the review deadline (`LIMIT_REVIEW_TIMEOUT_SECONDS`, 72 hours) passes and it expires. The request is signed by the owner's key (`device_signature` over `svc:limit-increase:{owner_id}:{requested_max_amount_minor}:{requested_daily_limit_minor}:{operation_timestamp}:{device_id}`, amounts in minor units): 422 `SIGNATURE_INVALID` when it does not verify under the owner's key, 422 `AUTHORIZATION_STALE` when `operation_timestamp` is further than the clock tolerance from now, 409 `AUTHORIZATION_REPLAYED` for a signed request accepted before. One open request per device and owner (another owner's request on a shared device never blocks this one): 409 `LIMIT_REQUEST_ALREADY_OPEN` names the open one. 404 `DEVICE_NOT_FOUND` for a device that never registered a PLC (for that owner).",
        headers: z.object({ 'idempotency-key': idempotencyKeyHeader.optional() }),
        body: limitIncreaseBody,
        requestExample: { body: exampleLimitIncrease },
        response: { 200: limitRequestResponse, 404: errorResponse, 409: errorResponse, 429: errorResponse, ...standardErrors },
      },
      config: { ...increaseRateLimit, idempotency: { scope: 'plc-limit-increase' } },
    },
    async (request) => {
      const body = request.body;
      const { owner } = await ownerOfDevice(pool, body.device_id, body.owner_id);
      const requested = {
        maxAmountMinor: parseLimitAmount(body.requested_max_amount, 'requested_max_amount'),
        dailyLimitMinor: parseLimitAmount(body.requested_daily_limit, 'requested_daily_limit'),
      };
      // Proven to come from the owner: signed by the owner's key, fresh, and accepted once (below).
      const signed = {
        ownerPublicKey: hexToBytes(owner, 32),
        requestedMaxAmountMinor: requested.maxAmountMinor,
        requestedDailyLimitMinor: requested.dailyLimitMinor,
        operationTimestampMs: body.operation_timestamp,
        deviceId: body.device_id,
        signature: hexToBytes(body.device_signature, 64),
      };
      if (!verifyLimitIncrease(signed)) {
        throw new DomainError('SIGNATURE_INVALID', "the request is not signed by the owner's key", { field: 'device_signature', owner_id: owner });
      }
      if (Math.abs(Date.now() - body.operation_timestamp) > config.CLOCK_TOLERANCE_MS) {
        throw new DomainError('AUTHORIZATION_STALE', `the request must be signed within ${config.CLOCK_TOLERANCE_MS} ms of now`, { field: 'operation_timestamp' });
      }
      const { facts, limits } = await deviceLimits(pool, ceilings, owner, body.device_id);
      const check = checkIncreaseRequest(requested, limits, ceilings);
      if (!check.ok) {
        throw new DomainError(check.code, check.message, {
          field: requested.maxAmountMinor > limits.maxAmountMinor || check.code === 'LIMIT_INCREASE_NOT_NEEDED' ? 'requested_max_amount' : 'requested_daily_limit',
          max_amount: decimal(limits.maxAmountMinor),
          daily_limit: decimal(limits.dailyLimitMinor),
          ceiling_max_amount: decimal(ceilings.maxAmountMinor),
          ceiling_daily_limit: decimal(ceilings.dailyLimitMinor),
        });
      }
      const requestId = randomUUID();
      const authorizationHash = limitIncreaseAuthorizationHash(signed);
      const accepted = await recordAuthorization(pool, {
        authorizationHash,
        kind: 'limit-increase',
        signerPubkey: owner,
        tokenId: null,
        referenceId: requestId,
        signedAtMs: body.operation_timestamp,
      });
      if (!accepted) throw new DomainError('AUTHORIZATION_REPLAYED', 'this signed request was accepted before: sign a new one', { field: 'device_signature' });
      const workflowId = workflowIds.limitReview(requestId);
      const startWorkflowOperation = new WithStartWorkflowOperation<typeof limitReviewWorkflow>('limitReviewWorkflow', {
        workflowId,
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        args: [{ requestId, reviewTimeoutMs: config.LIMIT_REVIEW_TIMEOUT_SECONDS * 1000 }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: [
          { key: deviceIdKey, value: body.device_id },
          { key: ownerIdKey, value: owner },
          { key: referenceIdKey, value: requestId },
          { key: businessStatusKey, value: 'PENDING' },
        ],
      });
      // A request the workflow refuses (the owner's own request already open) gives its signature back.
      await releaseWhenRefused(pool, authorizationHash, requestId, () =>
        withDomainErrors(() =>
        temporal.workflow.executeUpdateWithStart(openLimitRequestUpdate, {
          args: [
            {
              requestId,
              deviceId: body.device_id,
              ownerId: owner,
              requestedMaxAmountMinor: requested.maxAmountMinor.toString(),
              requestedDailyLimitMinor: requested.dailyLimitMinor.toString(),
              currentMaxAmountMinor: limits.maxAmountMinor.toString(),
              currentDailyLimitMinor: limits.dailyLimitMinor.toString(),
              tier: facts.tier,
              reason: body.reason,
            },
          ],
          startWorkflowOperation,
        }),
        ),
      );
      const row = await getLimitRequest(pool, requestId);
      if (row === null) throw new Error(`limit request ${requestId} was opened but is not in the database`);
      return toLimitRequest(row);
    },
  );
}

/** The admin routes: the review queue, a device's limits and requests, the decision. */
export async function adminPlcLimitRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool, temporal, config } = app.deps;
  const ceilings = ceilingsOf(config);
  app.addHook('onRequest', app.requireAdmin());
  const security = [{ bearer: [] }];

  routes.get(
    '/plc-limits/pending',
    {
      schema: {
        tags: ['admin: plc limits'],
        summary: 'Pending PLC limit increase requests, oldest first',
        description: 'The review queue: every PENDING request, oldest first, at most `limit` (1 to 200, default 50), each with what was asked, the limits the device had and the review deadline.',
        security,
        querystring: z.object({ limit: z.coerce.number().int().min(1).max(200).default(50).meta({ examples: [50] }) }),
        requestExample: { querystring: { limit: 50 } },
        response: { 200: z.array(limitRequestResponse), ...adminErrors },
      },
    },
    async (request) => (await listPendingLimitRequests(pool, request.query.limit)).map(toLimitRequest),
  );

  routes.get(
    '/plc-limits/:device_id',
    {
      schema: {
        tags: ['admin: plc limits'],
        summary: "A device's effective PLC limits and its latest increase requests",
        description:
          "The same view as `GET /api/v1/plc/limits/{device_id}`, plus the device's 20 latest increase requests (any status). 404 `DEVICE_NOT_FOUND` for a device that never registered a PLC.",
        security,
        params: deviceParam,
        querystring: ownerQuery,
        requestExample: { params: { device_id: exampleDevice }, querystring: { owner_id: examplePubkeys.alice } },
        response: {
          200: deviceLimitsResponse.extend({ requests: z.array(limitRequestResponse) }),
          404: errorResponse,
          ...adminErrors,
        },
      },
    },
    async (request) => {
      const view = await deviceLimitsView(pool, ceilings, request.params.device_id, request.query.owner_id);
      const requests = await listDeviceLimitRequests(pool, request.params.device_id, 20);
      return { ...view, requests: requests.map(toLimitRequest) };
    },
  );

  routes.post(
    '/plc-limits/requests/:request_id/decide',
    {
      schema: {
        tags: ['admin: plc limits'],
        summary: 'Approve or reject a PLC limit increase request (an update of its limit-review workflow)',
        description:
          "Sends the decision to `limit-review-<request_id>` as a workflow update, which records it; the decision (or its refusal) is an operation-log entry LIMIT_DECISION naming the admin. An approval grants the amounts asked for unless `granted_*` say otherwise (never above the ceilings: 422 `LIMIT_ABOVE_CEILING`) as an override of the request's device and owner for `valid_days` (default 30). A request already decided or expired: 409 `LIMIT_REQUEST_NOT_PENDING`; unknown: 404 `LIMIT_REQUEST_NOT_FOUND`.",
        security,
        params: z.object({ request_id: z.string().uuid() }),
        body: decisionBody,
        requestExample: {
          params: { request_id: '3f2a9c1e-5b7d-4e8a-9c6f-1d2e3f4a5b6c' },
          body: { decision: 'APPROVE', granted_max_amount: '3000.00', granted_daily_limit: '12000.00', valid_days: 30, note: 'verified supplier invoices' },
        },
        response: { 200: limitRequestResponse, 404: errorResponse, 409: errorResponse, ...adminErrors },
      },
    },
    async (request) => {
      const requestId = request.params.request_id;
      const row = await getLimitRequest(pool, requestId);
      if (row === null) throw new DomainError('LIMIT_REQUEST_NOT_FOUND', 'no such limit increase request', { request_id: requestId });
      const notPending = (status: string) =>
        new DomainError('LIMIT_REQUEST_NOT_PENDING', `the request is ${status}: it can no longer be decided`, { request_id: requestId, status });
      const body = request.body;
      return loggedOperation(
        pool,
        { operationType: 'LIMIT_DECISION', step: body.decision.toLowerCase(), ownerId: row.owner_id, referenceId: requestId, actor: request.admin?.username ?? 'unknown' },
        async () => {
          if (row.status !== 'PENDING') throw notPending(row.status);
          const decidedBy = request.admin?.username ?? 'unknown';
          const note = body.note ?? null;
          let decision;
          if (body.decision === 'APPROVE') {
            const granted = {
              maxAmountMinor: body.granted_max_amount === undefined ? row.requested_max_amount_minor : parseLimitAmount(body.granted_max_amount, 'granted_max_amount'),
              dailyLimitMinor:
                body.granted_daily_limit === undefined ? row.requested_daily_limit_minor : parseLimitAmount(body.granted_daily_limit, 'granted_daily_limit'),
            };
            if (granted.maxAmountMinor > ceilings.maxAmountMinor || granted.dailyLimitMinor > ceilings.dailyLimitMinor) {
              throw new DomainError('LIMIT_ABOVE_CEILING', 'no grant goes above the configured ceilings', {
                field: granted.maxAmountMinor > ceilings.maxAmountMinor ? 'granted_max_amount' : 'granted_daily_limit',
                ceiling_max_amount: decimal(ceilings.maxAmountMinor),
                ceiling_daily_limit: decimal(ceilings.dailyLimitMinor),
              });
            }
            decision = {
              decision: 'APPROVE' as const,
              grantedMaxAmountMinor: granted.maxAmountMinor.toString(),
              grantedDailyLimitMinor: granted.dailyLimitMinor.toString(),
              validDays: body.valid_days,
              decidedBy,
              note,
            };
          } else {
            decision = { decision: 'REJECT' as const, decidedBy, note };
          }
          try {
            await withDomainErrors(() => temporal.workflow.getHandle(row.workflow_id).executeUpdate(decideLimitRequestUpdate, { args: [decision] }));
          } catch (error) {
            if (error instanceof DomainError) throw error;
            // The workflow ended meanwhile (the deadline passed): the database says how.
            const latest = await getLimitRequest(pool, requestId);
            if (error instanceof WorkflowNotFoundError || (latest !== null && latest.status !== 'PENDING')) throw notPending(latest?.status ?? 'unknown');
            throw error;
          }
          const decided = await getLimitRequest(pool, requestId);
          if (decided === null) throw new Error(`limit request ${requestId} vanished`);
          return toLimitRequest(decided);
        },
      );
    },
  );
}
