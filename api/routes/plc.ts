import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { exampleCancelAuthorization, examplePlcIssued, examplePlcTransferred, examplePubkeys, exampleTokenId } from '../schemas/examples.ts';
import { expiryBucketOf, getPlc, issuePlcBucketed, listIssuerActive, listTransfers, releasePlc } from '../../db/plcs.ts';
import { recordOperation } from '../../db/operation-log.ts';
import { startExpiryBucket } from '../../services/plc-expiry.ts';
import { toPlcState } from '../../services/plc-state.ts';
import { DomainError } from '../../src/errors.ts';
import { expiryDueAtMs } from '../../src/plc/lifecycle.ts';
import { authorizationReference, recordAuthorization, releaseAuthorization } from '../../db/used-authorizations.ts';
import { ceilingsOf, deviceLimits } from '../../services/plc-limits.ts';
import {
  bytesToHex,
  cancelAuthorizationHash,
  cancelAuthorizationJsonSchema,
  checkFreshness,
  decodeTransportText,
  hexToBytes,
  isProtocolError,
  plcFromJson,
  plcJsonSchema,
  verifyCancel,
  withSignatureVerifier,
  type CancelAuthorizationJson,
  type Plc,
  type PlcJson,
} from '../../src/protocol/index.ts';
import { nodeVerifyEd25519 } from '../../infra/ed25519-node.ts';
import { authorizationReplayed, verifyOrRefuse } from '../../services/chain-intake.ts';
import { deviceIdOf, deviceRateLimit } from '../device-id.ts';
import { idempotentObjectId } from '../plugins/idempotency.ts';
import { expiryWorkflowIdOf, toChainEntry, toPlcJson, toPlcStatus } from '../plc-views.ts';
import { errorResponse, standardErrors } from '../schemas/common.ts';
import { idempotencyKeyHeader } from '../schemas/ledger.ts';
import { money } from '../schemas/money.ts';
import {
  cancelPlcResponse,
  chainEntry,
  createPlcRequest,
  createPlcResponse,
  deviceIdSchema,
  plcStatusResponse,
  pubkeySchema,
  tokenIdParam,
  transferPlcRequest,
  transferPlcResponse,
} from '../schemas/plc.ts';
import { createIssueReceipts, receiptSigningKey } from '../../services/issue-receipt.ts';

const modifyHeaders = z.object({ 'x-device-id': deviceIdSchema, 'idempotency-key': idempotencyKeyHeader.optional() });
const refusals = { 404: errorResponse, 409: errorResponse, 429: errorResponse, ...standardErrors };

/** The validated X-Device-ID ('-' when none was sent; the schemas of the routes that need one require it). */
function deviceOf(request: FastifyRequest): string {
  return deviceIdOf(request) ?? '-';
}

/** Rate limits keyed by client address and device id, by address alone, and by the verified signing key (api/device-id.ts). */
const rateLimit = deviceRateLimit;

/**
 * The issuer of a PLC being created, when its signature verifies (the rate limit's signing-key
 * dimension: a key counts only once proven, so naming someone else's key spends nothing of theirs).
 */
function verifiedIssuer(json: PlcJson | undefined, clockToleranceMs: number): string | undefined {
  if (json === undefined) return undefined;
  try {
    const plc = plcFromJson(json);
    return verifyOrRefuse(plc, clockToleranceMs, 'plc').ok ? bytesToHex(plc.commitment.issuerPublicKey) : undefined;
  } catch {
    return undefined;
  }
}

/** The issuer signing a cancel, when its signature verifies (the cancel's signing-key rate limit). */
function verifiedCanceller(json: CancelAuthorizationJson | undefined): string | undefined {
  if (json === undefined) return undefined;
  try {
    const authorization = {
      tokenId: json.token_id,
      commitmentHash: hexToBytes(json.commitment_hash, 32),
      timestampMs: json.timestamp_ms,
      issuerPublicKey: hexToBytes(json.issuer_pubkey, 32),
      signature: hexToBytes(json.signature, 64),
    };
    return withSignatureVerifier(nodeVerifyEd25519, () => verifyCancel(authorization)) ? json.issuer_pubkey : undefined;
  } catch {
    return undefined;
  }
}

export function parsePlc(json: PlcJson | undefined, transport: string | undefined): Plc {
  try {
    if (json !== undefined) return plcFromJson(json);
    if (transport !== undefined) return decodeTransportText(transport);
  } catch (error) {
    if (isProtocolError(error)) {
      throw new DomainError('PLC_INVALID', error.message, { field: json === undefined ? 'transport' : 'plc', reason: error.code });
    }
    throw error;
  }
  throw new DomainError('PLC_INVALID', 'send exactly one of plc or transport', { field: 'plc' });
}

/** The spec's PLC section: create, status, chain, the issuer's active PLCs, cancel, transfer. */
export async function plcRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool, temporal, config } = app.deps;
  const toleranceMs = config.CLOCK_TOLERANCE_MS;
  const ceilings = ceilingsOf(config);
  const { transfers } = app.services;
  // The service's issue receipts (docs/protocol.md section 19): the blocklist's key signs them unless RECEIPT_SIGNING_SEED.
  const receipts = createIssueReceipts({ pool, signingKey: receiptSigningKey(config) });
  const bucketOf = (dueAt: Date) => {
    const { start, end } = expiryBucketOf(dueAt, config.PLC_EXPIRY_BUCKET_MS);
    return { bucketStart: start, bucketEnd: end };
  };

  /** `field`: where the PLC sits in the body (`plc`, or '' when it is the body), for the `loc` of a refusal. */
  async function createPlc(request: FastifyRequest, plcJson: PlcJson, field: string) {
    const deviceId = deviceOf(request);
      const plc = parsePlc(plcJson, undefined);
      verifyOrRefuse(plc, toleranceMs, field);
      if (plc.transferChain.length > 0) {
        throw new DomainError('PLC_INVALID', 'a PLC is created with an empty transfer chain; register hops with /transfer/', {
          field: `${field}.transfer_chain`,
        });
      }
      const { commitment } = plc;
      const nowMs = Date.now();
      const freshness = checkFreshness(commitment.createdAtMs, nowMs, toleranceMs);
      if (!freshness.ok) {
        // A late retry of a create that happened (its answer lost; docs/protocol.md 9.4, "A retry
        // finds its result") gets the PLC it issued, in its current state, not PLC_NOT_FRESH.
        const issued = await getPlc(pool, commitment.tokenId);
        if (issued !== null && issued.commitment_hash === bytesToHex(plc.commitmentHash)) {
          const issueReceipt = await receipts.forRegistered(commitment);
          return { ...toPlcStatus(issued), workflow_id: expiryWorkflowIdOf(issued, config), issue_transaction_id: issued.issue_tx_id, created: false, issue_receipt: issueReceipt };
        }
        throw new DomainError('PLC_NOT_FRESH', `created_at must be within ${toleranceMs} ms of the server clock`, {
          field: `${field}.created_at`,
        });
      }
      const tokenId = commitment.tokenId;
      const issuerPubkey = bytesToHex(commitment.issuerPublicKey);
      const dueAtMs =
        config.PLC_EXPIRY_OVERRIDE_MS === undefined
          ? expiryDueAtMs(commitment.expiresAtMs, toleranceMs)
          : nowMs + config.PLC_EXPIRY_OVERRIDE_MS;
      // The device's progressive limits (services/plc-limits.ts), enforced by plc_issue_bucketed.
      const { limits } = await deviceLimits(pool, ceilings, issuerPubkey, deviceId);
      // Signed before the statement, kept by it only if the reservation is booked (docs/protocol.md
      // section 19): no receipt leaves the service for a PLC whose amount is not reserved.
      const receiptIssuedAtMs = Date.now();
      const receipt = bytesToHex(receipts.sign(commitment, receiptIssuedAtMs));
      // The whole create: one statement, one transaction (migration 35): the reservation, the row,
      // the receipt, the expiry bucket. No Temporal call (docs/plc.md, "Expiry by time buckets").
      const result = await issuePlcBucketed(
        pool,
        {
          tokenId,
          issuerPubkey,
          amountMinor: commitment.amountMinor,
          currency: commitment.currency as 'BRL' | 'USD' | 'EUR',
          createdAtMs: commitment.createdAtMs,
          expiresAtMs: commitment.expiresAtMs,
          nonce: bytesToHex(commitment.nonce),
          commitmentHash: bytesToHex(plc.commitmentHash),
          signature: bytesToHex(plc.issuerSignature),
          deviceId,
        },
        { amountMaxMinor: limits.maxAmountMinor, dailyLimitMinor: limits.dailyLimitMinor },
        {
          expiryDueAt: new Date(dueAtMs),
          receipt,
          receiptPubkey: receipts.servicePubkey,
          receiptIssuedAt: new Date(receiptIssuedAtMs),
          ...bucketOf(new Date(dueAtMs)),
        },
      );
      // The first create of a bucket starts its workflow, once a minute of expiry time at most; if
      // this fails (or the process dies first), the sweep starts it (plc-expiry-sweep).
      if (result.bucketNew) {
        try {
          await startExpiryBucket({ pool, temporal, taskQueue: config.TEMPORAL_TASK_QUEUE }, { start: result.bucketStart, end: result.bucketEnd });
        } catch (error) {
          request.log.warn({ err: error, bucket: result.bucketStart.toISOString() }, 'the expiry bucket\'s workflow was not started: the sweep starts it');
        }
      }
      if (result.created) transfers.rememberIssued(plc);
      return {
        ...toPlcStatus(result.plc),
        workflow_id: expiryWorkflowIdOf(result.plc, config),
        issue_transaction_id: result.plc.issue_tx_id,
        created: result.created,
        issue_receipt: result.receipt,
      };
  }

  const createSchema = {
    tags: ['plc'],
    headers: modifyHeaders,
    response: { 200: createPlcResponse, ...refusals },
  };

  routes.post(
    '/plc/create',
    {
      schema: {
        ...createSchema,
        summary: 'Register an issuer-signed PLC: books AVAILABLE -> PROMISED in one transaction; expired later by its expiry bucket (plc-expiry-<minute>)',
        description:
          "The issuer's wallet made and signed the PLC (docs/protocol.md); this registers it: the commitment and signature are verified, `created_at` must be within the clock tolerance of the server's clock, the chain must be empty, and the amount is checked against the device's progressive limits (per PLC and per 24 hours, from the owner's reputation tier and volume or an approved override, under `PLC_MAX_AMOUNT_MINOR` and `PLC_DAILY_LIMIT_MINOR`; docs/limits-and-fees.md). A refusal names the limit, what is left and the increase-request route. One PostgreSQL statement books issuer AVAILABLE -> PROMISED, stores the PLC with its expiry due time and its issue receipt, and registers its expiry bucket; no Temporal call (docs/plc.md, \"Expiry by time buckets\"). `workflow_id` names the expiry bucket that expires it (`plc-expiry-<minute>`), within a minute of `expires_at` plus the clock tolerance. A retry of the same PLC answers `created: false` with its current state; the optional Idempotency-Key (300 s) answers a retry from the stored response. The answer carries `issue_receipt`, the service's signature over the registered commitment (docs/protocol.md section 19): the issuer's wallet attaches it to the PLC, and an offline receiver checks it against the receipt keys of the signed blocklist. Refusals: 409 `INSUFFICIENT_FUNDS`, `ACCOUNT_FROZEN`, `PLC_ALREADY_EXISTS` (another PLC under this token id), `PLC_DAILY_LIMIT_EXCEEDED`; 422 `PLC_INVALID.<reason>`, `PLC_NOT_FRESH`, `PLC_AMOUNT_ABOVE_MAXIMUM`.",
        body: createPlcRequest,
        requestExample: { body: { plc: examplePlcIssued } },
      },
      config: {
        ...rateLimit('plc', config.RATE_LIMIT_PLC_PER_MINUTE, (request) => verifiedIssuer((request.body as { plc?: PlcJson } | undefined)?.plc, toleranceMs)),
        idempotency: { scope: 'plc-create' },
      },
    },
    async (request) => createPlc(request, request.body.plc, 'plc'),
  );

  routes.post(
    '/plcs',
    {
      schema: {
        ...createSchema,
        summary: 'Protocol-level create: the body is the PLC JSON itself (amount, currency and the signed fields)',
        description:
          'The same operation as `POST /api/v1/plc/create`, in the protocol\'s shape: the body is the PLC JSON itself rather than wrapped in `{"plc": ...}`. Same checks, same answer, same Idempotency-Key scope (a key used on one form replays on the other).',
        body: createPlcRequest.shape.plc,
        requestExample: { body: examplePlcIssued },
      },
      config: {
        ...rateLimit('plc', config.RATE_LIMIT_PLC_PER_MINUTE, (request) => verifiedIssuer(request.body as PlcJson | undefined, toleranceMs)),
        idempotency: { scope: 'plc-create' },
      },
    },
    async (request) => createPlc(request, request.body, ''),
  );

  routes.get(
    '/plc/:token_id/status',
    {
      schema: {
        tags: ['plc'],
        summary: "A PLC's status",
        description:
          'The PLC as the server knows it: status (ISSUED, TRANSFERRED, REDEEMED, EXPIRED, CANCELLED), current bearer, chain length and head hash, and whether a redemption is in flight. A hop made offline and not yet registered (`POST /api/v1/transfer/`) is not in it. 404 `PLC_NOT_FOUND`.',
        params: tokenIdParam,
        requestExample: { params: { token_id: exampleTokenId } },
        response: { 200: plcStatusResponse, 404: errorResponse, ...standardErrors },
      },
      config: rateLimit('plc', config.RATE_LIMIT_PLC_PER_MINUTE),
    },
    async (request) => {
      const row = await getPlc(pool, request.params.token_id);
      if (row === null) throw new DomainError('PLC_NOT_FOUND', 'no such PLC');
      return toPlcStatus(row);
    },
  );

  routes.get(
    '/plc/:token_id/chain',
    {
      schema: {
        tags: ['plc'],
        summary: "A PLC's registered transfer chain, in order",
        description:
          'Every registered hop of the PLC, from the issuer to the current bearer, with its position and when it was registered; each record is the signed transfer record a device made (docs/protocol.md). 404 `PLC_NOT_FOUND`.',
        params: tokenIdParam,
        requestExample: { params: { token_id: exampleTokenId } },
        response: { 200: z.array(chainEntry), 404: errorResponse, ...standardErrors },
      },
      config: rateLimit('plc', config.RATE_LIMIT_PLC_PER_MINUTE),
    },
    async (request) => {
      const row = await getPlc(pool, request.params.token_id);
      if (row === null) throw new DomainError('PLC_NOT_FOUND', 'no such PLC');
      return (await listTransfers(pool, row.token_id)).map(toChainEntry);
    },
  );

  routes.get(
    '/plc/:token_id/json',
    {
      schema: {
        tags: ['plc'],
        summary: "The PLC in the protocol's JSON form (docs/protocol.md section 12) with its registered chain: what a wallet verifies and redeems",
        description:
          "The PLC as the server registered it: the issuer-signed commitment and every transfer record registered so far, in order, in the protocol's JSON form. It verifies (docs/protocol.md section 7) like any copy, so a wallet that lost its own copy, or a bearer about to redeem, can rebuild it and check it itself; the server's word is not needed. It carries the service's `issue_receipt` (section 19) when one was made (every PLC created since receipts exist). No admin rights. 404 `PLC_NOT_FOUND`.",
        params: tokenIdParam,
        requestExample: { params: { token_id: exampleTokenId } },
        response: { 200: plcJsonSchema, 404: errorResponse, ...standardErrors },
      },
      config: rateLimit('plc', config.RATE_LIMIT_PLC_PER_MINUTE),
    },
    async (request) => {
      const stored = await getPlc(pool, request.params.token_id);
      if (stored === null) throw new DomainError('PLC_NOT_FOUND', 'no such PLC');
      const [transfersOf, issueReceipt] = await Promise.all([listTransfers(pool, stored.token_id), receipts.kept(stored.token_id)]);
      return toPlcJson(stored, transfersOf, issueReceipt);
    },
  );

  routes.get(
    '/plc/issuer/:issuer_pubkey/active',
    {
      schema: {
        tags: ['plc'],
        summary: "The issuer's ISSUED and TRANSFERRED PLCs (recovery after a lost create response), newest first, at most 200",
        description:
          "The PLCs this key issued that are still live (ISSUED or TRANSFERRED), newest first, at most 200. A wallet whose create request committed but whose answer was lost finds its PLC here instead of creating a second one.",
        params: z.object({ issuer_pubkey: pubkeySchema }),
        requestExample: { params: { issuer_pubkey: examplePubkeys.alice } },
        response: { 200: z.array(plcStatusResponse), ...standardErrors },
      },
      config: rateLimit('plc', config.RATE_LIMIT_PLC_PER_MINUTE),
    },
    async (request) => (await listIssuerActive(pool, request.params.issuer_pubkey, 200)).map(toPlcStatus),
  );

  routes.post(
    '/plc/:token_id/cancel',
    {
      schema: {
        tags: ['plc'],
        summary: 'Cancel an ISSUED PLC (issuer-signed): books PROMISED -> AVAILABLE in one transaction',
        description:
          "Only the original issuer may cancel, only a PLC still ISSUED with no hop registered, with an authorisation signed over the PLC's commitment within the clock tolerance (docs/protocol.md section 13). One transaction locks the PLC, checks it is still ISSUED with no hop, and books PROMISED -> AVAILABLE (a racing hop, redemption or expiry that committed first wins). Refusals: 409 `PLC_NOT_CANCELLABLE` (transferred, redeemed, expired or cancelled already), `PLC_MISMATCH`; 422 `SIGNATURE_INVALID`, `AUTHORIZATION_STALE`; 404 `PLC_NOT_FOUND`.",
        params: tokenIdParam,
        headers: modifyHeaders,
        body: z
          .strictObject({ authorization: cancelAuthorizationJsonSchema })
          .describe('CancelPLCRequest: the issuer-signed cancel authorisation (docs/protocol.md section 13)'),
        requestExample: { params: { token_id: exampleTokenId }, body: { authorization: exampleCancelAuthorization } },
        response: { 200: cancelPlcResponse, ...refusals },
      },
      // The same cancel again under the same Idempotency-Key gets the stored answer (the first
      // one's 200), not the PLC_NOT_CANCELLABLE a second cancel of a CANCELLED PLC would get.
      config: {
        ...rateLimit('plc', config.RATE_LIMIT_PLC_PER_MINUTE, (request) => verifiedCanceller((request.body as { authorization?: CancelAuthorizationJson } | undefined)?.authorization)),
        idempotency: { scope: 'cancel' },
      },
    },
    async (request) => {
      const tokenId = request.params.token_id;
      const body = request.body.authorization;
      if (body.token_id !== tokenId) {
        throw new DomainError('PLC_MISMATCH', 'the authorisation names another PLC', { token_id: body.token_id });
      }
      const row = await getPlc(pool, tokenId);
      if (row === null) throw new DomainError('PLC_NOT_FOUND', 'no such PLC');
      if (body.issuer_pubkey !== row.issuer_pubkey || body.commitment_hash !== row.commitment_hash) {
        throw new DomainError('SIGNATURE_INVALID', 'only the original issuer may cancel, over the PLC commitment', {
          field: 'authorization.issuer_pubkey',
        });
      }
      const authorization = {
        tokenId,
        commitmentHash: hexToBytes(body.commitment_hash, 32),
        timestampMs: body.timestamp_ms,
        issuerPublicKey: hexToBytes(body.issuer_pubkey, 32),
        signature: hexToBytes(body.signature, 64),
      };
      // The library's check with Node's Ed25519 underneath, as for chains (infra/ed25519-node.ts).
      if (!withSignatureVerifier(nodeVerifyEd25519, () => verifyCancel(authorization))) {
        throw new DomainError('SIGNATURE_INVALID', 'the cancel signature does not verify', { field: 'authorization.signature' });
      }
      // The cancellation's id: derived from the Idempotency-Key and body when there is one (so
      // that only a retry of this very request finds it), else the token id.
      const cancellationId = idempotentObjectId(request) ?? tokenId;
      const used = {
        authorizationHash: bytesToHex(cancelAuthorizationHash(authorization)),
        kind: 'cancel' as const,
        signerPubkey: body.issuer_pubkey,
        tokenId,
        referenceId: cancellationId,
        signedAtMs: body.timestamp_ms,
      };
      // Each authorisation is accepted once (docs/protocol.md 9.4), whatever its Idempotency-Key;
      // but a retry with an Idempotency-Key of a cancel whose answer was lost (9.4, "A retry finds
      // its result") gets the cancellation it made, or, when its first attempt stopped between
      // claiming the authorisation and cancelling, runs the cancel again (the update is the PLC
      // workflow's, which cancels once).
      const usedFor = await authorizationReference(pool, used.authorizationHash);
      const retry = request.idempotencyClaim !== null && usedFor === cancellationId;
      if (retry && row.status === 'CANCELLED' && row.final_tx_id !== null) {
        return {
          token_id: tokenId,
          status: 'CANCELLED' as const,
          released_amount: money(row.amount_minor, row.currency),
          currency: row.currency,
          transaction_id: row.final_tx_id,
        };
      }
      if (!checkFreshness(body.timestamp_ms, Date.now(), toleranceMs).ok) {
        throw new DomainError('AUTHORIZATION_STALE', `the authorisation must be signed within ${toleranceMs} ms of now`, { field: 'authorization.timestamp_ms' });
      }
      if (usedFor !== null && !retry) throw authorizationReplayed();
      if (row.status !== 'ISSUED' || row.chain_length > 0) {
        throw new DomainError('PLC_NOT_CANCELLABLE', `a ${row.status} PLC cannot be cancelled`, { status: row.status, chain_length: row.chain_length });
      }
      // Claimed before the cancel runs (of two identical cancels racing, one claims it) and
      // released if the cancel is refused: only a cancel that happened keeps its authorisation.
      if (!retry && !(await recordAuthorization(pool, used))) throw authorizationReplayed();
      // PostgreSQL decides (db/plcs.ts releasePlc): a cancel racing a first hop, a redemption or the
      // expiry finds the PLC as the winner left it.
      const startedAt = new Date();
      const released = await releasePlc(pool, tokenId, 'CANCELLED');
      const cancelledPlc = released.plc;
      // A retry whose first attempt cancelled finds the PLC CANCELLED: its cancellation.
      if (cancelledPlc === null || (!released.released && !(retry && cancelledPlc.status === 'CANCELLED'))) {
        await releaseAuthorization(pool, used.authorizationHash, cancellationId);
        throw new DomainError('PLC_NOT_CANCELLABLE', `a ${cancelledPlc?.status ?? 'missing'} PLC cannot be cancelled`, {
          status: cancelledPlc?.status,
          chain_length: cancelledPlc?.chain_length,
        });
      }
      if (released.released) {
        await recordOperation(pool, { operationType: 'PLC_CANCEL', step: 'cancelPlc', ownerId: cancelledPlc.issuer_owner_id, referenceId: tokenId, startedAt });
      }
      const state = toPlcState(cancelledPlc);
      return {
        token_id: tokenId,
        status: 'CANCELLED' as const,
        released_amount: money(BigInt(state.amountMinor), state.currency),
        currency: state.currency,
        transaction_id: state.finalTxId ?? '',
      };
    },
  );

  routes.post(
    '/transfer/',
    {
      schema: {
        tags: ['plc'],
        summary: 'Register transfer hops learnt offline; the whole chain is verified; appending a known chain is idempotent',
        description:
          "A device that received the PLC offline (BLE, NFC, QR) registers the chain it holds, as JSON or as the QR text. The whole chain is verified (every record signed by the bearer before it, hash-linked, fresh nonces); the records the server does not know yet are appended. Registering a chain the server already has (or a prefix of it) changes nothing and answers `appended: 0`. A record that spends a state which already has another successor is a double spend: refused with 409 `DOUBLE_SPEND_DETECTED`, naming the signer, and a risk flag is raised. Other refusals: 409 `PLC_NOT_TRANSFERABLE` (redeemed, cancelled, expired, or a redemption in flight), `PLC_EXPIRED`, `PLC_MISMATCH`; 422 `PLC_INVALID.<reason>`; 404 `PLC_NOT_FOUND`. For a PLC issued before expiry buckets, the first hop also moves its own workflow's status to TRANSFERRED (through the status outbox).",
        headers: modifyHeaders,
        body: transferPlcRequest,
        requestExample: { body: { plc: examplePlcTransferred } },
        response: { 200: transferPlcResponse, ...refusals },
      },
      config: { ...rateLimit('transfer', config.RATE_LIMIT_TRANSFER_PER_MINUTE), idempotency: { scope: 'transfer' } },
    },
    async (request) =>
      transfers.registerTransfers({
        plc: parsePlc(request.body.plc, request.body.transport),
        field: request.body.plc === undefined ? 'transport' : 'plc',
        deviceId: deviceOf(request),
      }),
  );
}
