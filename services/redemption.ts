import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { activeBlock, keyBlockedRefusal } from '../db/blocklist.ts';
import type { Pool } from '../db/pool.ts';
import { getRedemption, type RedemptionRow } from '../db/redemptions.ts';
import { authorizationReference } from '../db/used-authorizations.ts';
import { nodeVerifyEd25519 } from '../infra/ed25519-node.ts';
import { authorizeRedemption } from '../src/plc/authorize-redemption.ts';
import { fromTransferRecord } from '../src/plc/register-transfers.ts';
import type { Plc, RedeemAuthorization } from '../src/protocol/index.ts';
import { openRedemptionUpdate } from '../workflows/redemption-messages.ts';
import type { redemptionWorkflow } from '../workflows/redemption.ts';
import { bearerIdKey, businessStatusKey, tokenIdKey } from '../workflows/search-attributes.ts';
import { authorizationReplayed, refuseRecordsFromTheFuture, verifyOrRefuse } from './chain-intake.ts';
import { feeRailOf, redemptionFee } from './fees.ts';
import { checkPayoutDestination } from '../src/settlement/payout-destination.ts';
import { checkForkAgainstRegistered, type ChainRoute } from './fork-check.ts';
import { bindToRegistered } from './commitment-binding.ts';
import { payoutMinorOf } from '../src/settlement/payout.ts';
import { withDomainErrors } from './temporal.ts';

/**
 * The redemption intake (docs/settlement.md): a bearer's signed redeem authorisation over a
 * presented PLC is checked, and the redemption workflow (`redemption-<id>`) is started and asked
 * to open it (book the bearer's PENDING). One call opens one redemption, from whichever route or
 * batch received it: it needs no HTTP request, only what the caller read from one.
 */

export interface RedemptionServiceDeps {
  pool: Pool;
  temporal: Client;
  config: {
    CLOCK_TOLERANCE_MS: number;
    TEMPORAL_TASK_QUEUE: string;
    REDEMPTION_WEBHOOK_WAIT_MS: number;
    REDEMPTION_OPERATOR_WAIT_MS: number;
  };
}

export interface OpenRedemptionRequest {
  /** The PLC as presented, parsed (its chain not yet verified). */
  plc: Plc;
  authorization: RedeemAuthorization;
  /** Where the PLC sits in the caller's request (`plc`, `plc_payload`, `items.3.plc`), for the `loc` of a refusal. */
  field: string;
  /** Where the chain was received, kept in a fork's flag (`redeem`, `settlements`, ...). */
  route: ChainRoute;
  /** The presenting device's id ('-' when unknown), recorded with the redemption. */
  deviceId: string;
  /**
   * The redemption's id (a UUID); a fresh random one when left out. A caller that retries under
   * its own idempotency key passes an id derived from it (the redeem routes' Idempotency-Key, a POS
   * batch's item): the retry then answers the redemption that id names, in its current state,
   * however the first attempt ended (answered, timed out, lost its answer), and a retry while the
   * first is still opening joins its opening; nothing is ever booked twice.
   */
  redemptionId?: string;
}

export interface RedemptionService {
  /**
   * Checks the chain (verification, fork, record clocks) and the authorisation, then opens the
   * redemption; answers the redemption as opened (PENDING_PAYMENT). Refuses with the domain's
   * errors (409 `DOUBLE_SPEND_DETECTED`, `PLC_MISMATCH` (another PLC, or a commitment other than the registered one), `PLC_CANCELLED_AFTER_TRANSFER`, `NOT_CURRENT_BEARER`,
   * `AUTHORIZATION_REPLAYED`, `FEE_CONSENT_REQUIRED`, `FEE_EXCEEDS_AMOUNT`, `KEY_BLOCKED` (a blocked bearer, or a new hop a blocked key signed), and what the opening refuses: `PLC_ALREADY_REDEEMED`,
   * `PLC_NOT_REDEEMABLE`, `PLC_EXPIRED`, ...; 422 `PLC_INVALID`, `UNSUPPORTED_RAIL`,
   * `BOLETO_INVALID`, `BOLETO_AMOUNT_MISMATCH`,
   * `SIGNATURE_INVALID`, `AUTHORIZATION_STALE`; 404 `PLC_NOT_FOUND`).
   */
  openRedemption(request: OpenRedemptionRequest): Promise<RedemptionRow>;
}

export function createRedemptionService(deps: RedemptionServiceDeps): RedemptionService {
  const { pool, temporal, config } = deps;
  const toleranceMs = config.CLOCK_TOLERANCE_MS;

  /** The redemption a retry's derived id names, when a first attempt opened it (for this PLC). */
  async function openedBefore(request: OpenRedemptionRequest): Promise<RedemptionRow | null> {
    if (request.redemptionId === undefined) return null;
    const row = await getRedemption(pool, request.redemptionId);
    return row !== null && row.token_id === request.plc.commitment.tokenId ? row : null;
  }

  async function openRedemption(request: OpenRedemptionRequest): Promise<RedemptionRow> {
    // A retry of an attempt that opened its redemption (docs/protocol.md 9.4, "A retry finds its
    // result"): answered before any check, so that neither the authorisation's age nor the PLC's
    // state since (settled, redeemed) refuses the client the outcome of its own first attempt.
    const before = await openedBefore(request);
    if (before !== null) return before;
    const { plc, field, route, deviceId } = request;
    verifyOrRefuse(plc, toleranceMs, field);
    // The registered commitment is the only one (services/commitment-binding.ts): another key's
    // commitment, an issuer's second one, or a chain its issuer cancelled after signing it over
    // are refused before anything else is decided. Amount and currency are read from it below.
    const registered = await bindToRegistered(pool, plc, { route, deviceId });
    // Then the fork check, as at every route that receives a chain: a fork is refused with its
    // evidence and flagged whatever the PLC's state (being redeemed, REDEEMED, EXPIRED).
    await checkForkAgainstRegistered(pool, { tokenId: plc.commitment.tokenId, presented: plc.transferChain, route, deviceId }, registered.known);
    const { amount_minor: amountMinor, currency, commitment_hash: commitmentHash } = registered.plc;
    refuseRecordsFromTheFuture(plc, Date.now(), toleranceMs, field);
    // The library's check with Node's Ed25519 underneath, as for the chain (infra/ed25519-node.ts).
    const authorized = authorizeRedemption(plc, request.authorization, { nowMs: Date.now(), clockToleranceMs: toleranceMs, verifySignature: nodeVerifyEd25519 });
    // Each authorisation is accepted once (docs/protocol.md 9.4): a quick refusal here; the
    // redemption's opening transaction records it and decides a race.
    const usedFor = await authorizationReference(pool, authorized.authorizationHash);
    if (usedFor !== null) {
      // Used by the first attempt of this very retry (it committed since the look-up above): its redemption.
      const opened = usedFor === request.redemptionId ? await openedBefore(request) : null;
      if (opened !== null) return opened;
      throw authorizationReplayed();
    }
    // A blocked bearer (docs/protocol.md section 18) is refused before any workflow starts. The
    // opening transaction refuses it again (migration 27_key_blocklist's trigger), with a new hop the request
    // brings that a blocked key signed: a block made meanwhile is not missed.
    const block = await activeBlock(pool, authorized.bearerPubkey);
    if (block !== null) throw keyBlockedRefusal(authorized.bearerPubkey, 'bearer', block.id);
    // The fee, by the schedule version the bearer consented to: refused here, before anything is
    // booked, when it charges a fee the bearer never consented to (docs/limits-and-fees.md).
    const fee = await redemptionFee(pool, {
      ownerId: authorized.bearerPubkey,
      rail: feeRailOf(request.authorization.settlementRail),
      amountMinor,
      currency,
    });
    // A boleto is paid in full: a line that writes an amount must write the payout, amount less fee.
    checkPayoutDestination(request.authorization, { amountMinor: payoutMinorOf(amountMinor, fee.feeMinor), currency });
    const redemptionId = request.redemptionId ?? randomUUID();
    const { tokenId, bearerPubkey } = authorized;
    const startWorkflowOperation = new WithStartWorkflowOperation<typeof redemptionWorkflow>('redemptionWorkflow', {
      workflowId: `redemption-${redemptionId}`,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      args: [{ redemptionId, tokenId, webhookWaitMs: config.REDEMPTION_WEBHOOK_WAIT_MS, operatorWaitMs: config.REDEMPTION_OPERATOR_WAIT_MS }],
      // A derived id's retry while the first attempt still opens joins that opening (the workflow's
      // update answers every open with the one it made); a random id never meets a running one.
      workflowIdConflictPolicy: request.redemptionId === undefined ? 'FAIL' : 'USE_EXISTING',
      typedSearchAttributes: [
        { key: tokenIdKey, value: tokenId },
        { key: bearerIdKey, value: bearerPubkey },
        // PENDING_PAYMENT from the start: a lean run (workflows/redemption.ts) upserts only a status that differs (REFUSED, a row found in another state).
        { key: businessStatusKey, value: 'PENDING_PAYMENT' },
      ],
    });
    await withDomainErrors(() =>
      temporal.workflow.executeUpdateWithStart(openRedemptionUpdate, {
        args: [
          {
            redemptionId,
            tokenId,
            bearerPubkey,
            headHash: authorized.headHash,
            commitmentHash,
            rail: authorized.rail,
            destination: authorized.destination,
            destinationType: authorized.destinationType,
            deviceId,
            feeMinor: fee.feeMinor.toString(),
            feeScheduleVersion: fee.version,
            authorizationHash: authorized.authorizationHash,
            signedAtMs: authorized.signedAtMs,
            presented: plc.transferChain.map(fromTransferRecord),
            expiryGraceMs: toleranceMs,
          },
        ],
        startWorkflowOperation,
      }),
    );
    // The update answers the redemption's state; the answer shows the row (destination, rail,
    // dates), read once it is committed.
    const row = await getRedemption(pool, redemptionId);
    if (row === null) throw new Error(`redemption ${redemptionId} was opened but is not in the database`);
    return row;
  }

  return { openRedemption };
}
