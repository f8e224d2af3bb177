import { createTransferAppender, getPlcWithChainFrom, isUniqueViolation, type PendingAppend, type PlcHead, type PlcRow, type PlcWithChain } from '../db/plcs.ts';
import type { Pool } from '../db/pool.ts';
import { DomainError } from '../src/errors.ts';
import { forkFindingOf } from '../src/plc/fork-check.ts';
import { expiryDueAtMs, type PlcStatus } from '../src/plc/lifecycle.ts';
import { decideRegistration, fromTransferRecord } from '../src/plc/register-transfers.ts';
import { bytesEqual, bytesToHex, checkRecordClock, computeRecordHash, hexToBytes, verifyPlc, type Plc, type VerifiedPrefix } from '../src/protocol/index.ts';
import { nodeVerifyEd25519 } from '../infra/ed25519-node.ts';
import { refuseRecordsFromTheFuture, verifyOrRefuse } from './chain-intake.ts';
import { checkForkAgainstRegistered, refuseFork, type ChainRoute } from './fork-check.ts';
import { bindToRegistered } from './commitment-binding.ts';
import { registeredChainOf, RegisteredChains, type RegisteredChain } from './registered-chains.ts';
import type { KnownRecord } from '../src/plc/register-transfers.ts';

/**
 * The registration of transfer hops learnt offline (docs/plc.md, `POST /api/v1/transfer/`): the
 * whole presented chain is verified, a fork is refused and flagged, and the records the server
 * does not know yet are appended (group-committed with the other registrations in flight). One
 * call registers one PLC's chain, from whichever route or batch received it: it needs no HTTP
 * request, only what the caller read from one.
 *
 * The service keeps the process's memory of the chains it registered (services/registered-chains.ts),
 * which lets a hop on a chain this process registered skip the read and the verification of what
 * it registered before; the create route tells it of each PLC it issued (`rememberIssued`).
 */

export interface TransferServiceDeps {
  pool: Pool;
  config: {
    CLOCK_TOLERANCE_MS: number;
    PLC_CHAIN_MEMO_MAX: number;
    GROUP_COMMIT_IN_FLIGHT: number;
  };
}

export interface RegisterTransfersInput {
  /** The PLC as presented, parsed (its chain not yet verified). */
  plc: Plc;
  /** Where the PLC sits in the caller's request (`plc`, `transport`, `items.3.plc`), for the `loc` of a refusal. */
  field: string;
  /** The presenting device's id ('-' when unknown): stored with each hop appended and in a fork's flag. */
  deviceId: string;
  /** Where the chain was received, kept in a fork's flag; default `transfer`. */
  route?: ChainRoute;
}

/** The PLC after a registration, and how many hops it appended (0: the server knew the chain). */
export interface TransferRegistration {
  token_id: string;
  status: PlcStatus;
  chain_length: number;
  bearer_pubkey: string;
  head_hash: string;
  appended: number;
}

export interface TransferService {
  /**
   * Registers the presented chain. Idempotent: a chain the server already has (or a prefix of
   * it) appends nothing and answers `appended: 0`. Refuses with the domain's errors: 404
   * `PLC_NOT_FOUND`, 409 `DOUBLE_SPEND_DETECTED` (flagged), `PLC_NOT_TRANSFERABLE`, `PLC_EXPIRED`,
   * `PLC_MISMATCH` (a commitment other than the registered one), `PLC_CANCELLED_AFTER_TRANSFER`,
   * `CONFLICT` (kept losing races), 422 `PLC_INVALID`.
   */
  registerTransfers(input: RegisterTransfersInput): Promise<TransferRegistration>;
  /** A PLC this process just issued: its next hop needs no read. */
  rememberIssued(plc: Plc): void;
}

/** Read-decide-append rounds before a registration that keeps losing races gives up (409). */
const appendAttemptsMax = 5;

export function createTransferService(deps: TransferServiceDeps): TransferService {
  const { pool, config } = deps;
  const toleranceMs = config.CLOCK_TOLERANCE_MS;
  const registeredChains = new RegisteredChains(config.PLC_CHAIN_MEMO_MAX);
  const transferAppender = createTransferAppender(pool, { maxBatch: 64, inFlightMax: config.GROUP_COMMIT_IN_FLIGHT });

  /**
   * Appends (group-committed with the other registrations in flight); null when the PLC was not
   * as read, or a competing registration took the same successor or nonce first. On success the
   * chain as it now stands is remembered, from `before` (the state the decision was made on).
   */
  async function appendOrLose(pending: PendingAppend, before: RegisteredChain | null): Promise<PlcHead | null> {
    let head: PlcHead | null;
    try {
      head = await transferAppender.append(pending);
    } catch (error) {
      // The one-successor or nonce constraint: a competing registration got in between.
      // KEY_BLOCKED (a new hop a blocked key signed, docs/protocol.md section 18) comes from the
      // appender as the refusal of this item alone, and goes out as it came.
      if (!isUniqueViolation(error)) throw error;
      head = null;
    }
    if (head === null) registeredChains.forget(pending.read.token_id);
    else if (before !== null) registeredChains.rememberExtended(before, pending.decision.records, { chainLength: head.chain_length, headHash: head.head_hash });
    return head;
  }

  async function registerTransfers(input: RegisterTransfersInput): Promise<TransferRegistration> {
    const { plc, field, deviceId } = input;
    const route = input.route ?? 'transfer';
    const tokenId = plc.commitment.tokenId;

    // The common case: this process registered the PLC's chain as it stood (its create or its
    // last hop), so neither that read nor those signatures are needed again; the append's
    // compare-and-set on the chain's length and head tells whether the PLC is still there.
    //
    // A chain more than one record past the remembered one is read first: its middle records
    // were most likely registered through another replica since, and a compare-and-set against
    // the remembered head would fail after verifying them, then read and verify again (three
    // statements and twice the signatures, where the read path takes two). One new record is
    // the hop a wallet registers as it goes; several at once come after an offline stretch,
    // where one read costs little beside their verification.
    const remembered = registeredChains.get(tokenId);
    const memo = remembered !== undefined && remembered.commitmentHash === bytesToHex(plc.commitmentHash) ? remembered : undefined;
    if (memo === undefined || plc.transferChain.length > memo.chainLength + 1) {
      // Nothing remembered (another replica registered the chain, or this process forgot it):
      // the hop a wallet registers as it goes is its chain's last record, the others registered.
      // Decided from the presented PLC alone and appended if the database agrees, in one
      // statement; otherwise the PLC is read below, as if this was never tried.
      const lastHop = lastHopAppend(plc, deviceId, toleranceMs);
      if (lastHop !== null) {
        const head = await appendOrLose(lastHop, null);
        if (head !== null) return registration(head, 1);
      }
    } else {
      verifyOrRefuse(plc, toleranceMs, field, memo.prefix);
      const decision =
        Date.now() > expiryDueAtMs(memo.expiresAtMs, toleranceMs)
          ? null
          : decideRegistration({ status: memo.status, redemptionInFlight: false }, memo.known, plc.transferChain, memo.knownRecords);
      if (decision?.kind === 'extend') {
        refuseRecordsFromTheFuture(plc, Date.now(), toleranceMs, field);
        const head = await appendOrLose(
          { read: { token_id: tokenId, status: memo.status, chain_length: memo.chainLength, head_hash: memo.headHash }, decision, deviceId },
          memo,
        );
        if (head !== null) return registration(head, decision.records.length);
      }
      // Anything else (an older or equal chain, a fork, expiry, a PLC that moved on, on this
      // replica or another) is answered from the database.
      registeredChains.forget(tokenId);
    }

    // Read, decide, then append only if the PLC is still as read; a registration that lost a
    // race (another hop, a cancel, an expiry, a redemption) reads again and decides again.
    // Registered records never change and a chain only grows, so a chain already known here
    // (the remembered one, or the previous round's read) is a true prefix of the PLC's chain:
    // only the records after it are read (services/registered-chains.ts, "consistency").
    let knownPrefix: KnownPrefix | undefined = memo;
    for (let attempt = 1; ; attempt += 1) {
      const stored = await readAfter(tokenId, knownPrefix);
      if (stored !== null) knownPrefix = { commitmentHash: stored.plc.commitment_hash, chainLength: stored.known.length, headHash: stored.plc.head_hash, known: stored.known };
      // The records registered before were verified then: only what is new is verified again
      // (same answer as a full verification, see VerifyOptions.verifiedPrefix).
      const sameCommitment = stored !== null && bytesEqual(hexToBytes(stored.plc.commitment_hash, 32), plc.commitmentHash);
      verifyOrRefuse(plc, toleranceMs, field, sameCommitment ? verifiedPrefixOf(stored) : undefined);
      if (stored === null) throw new DomainError('PLC_NOT_FOUND', 'no such PLC: it must be created first');
      // The registered commitment is the only one (services/commitment-binding.ts): another key's
      // commitment, an issuer's second one, or a chain its issuer cancelled after signing it over
      // are refused (the last two with their evidence) before anything else is decided.
      await bindToRegistered(pool, plc, { route, deviceId }, stored);
      // The fork check comes first: a fork is refused with its evidence and flagged whatever
      // became of the PLC since (expired, redeemed, being redeemed).
      await checkForkAgainstRegistered(pool, { tokenId, presented: plc.transferChain, route, deviceId }, stored.known);
      refuseRecordsFromTheFuture(plc, Date.now(), toleranceMs, field);
      const row = stored.plc;
      if (Date.now() > expiryDueAtMs(Number(row.expires_at_ms), toleranceMs) && row.status !== 'REDEEMED') {
        throw new DomainError('PLC_EXPIRED', 'the PLC has expired', { expires_at: row.expires_at.toISOString() });
      }
      const decision = decideRegistration({ status: row.status, redemptionInFlight: row.redemption_id !== null }, stored.known, plc.transferChain);
      switch (decision.kind) {
        case 'refuse':
          throw new DomainError('PLC_NOT_TRANSFERABLE', `a ${row.status} PLC cannot be transferred`, {
            status: row.status,
            redemption_in_flight: row.redemption_id !== null,
          });
        case 'fork':
          // checkForkAgainstRegistered refused it above, on the same registered chain.
          return refuseFork(pool, forkFindingOf(tokenId, decision), { route, deviceId });
        case 'unrelated':
          throw new DomainError('PLC_MISMATCH', 'the presented chain does not continue the registered one', { position: decision.index });
        case 'unchanged': {
          const entry = registeredChainOf(row, stored.known);
          if (entry !== null) registeredChains.remember(entry);
          return registration(row, 0);
        }
        case 'extend':
          break;
      }
      const head = await appendOrLose({ read: row, decision, deviceId }, registeredChainOf(row, stored.known));
      if (head !== null) return registration(head, decision.records.length);
      if (attempt >= appendAttemptsMax) {
        throw new DomainError('CONFLICT', 'the PLC kept changing while this registration was decided; send it again', { token_id: tokenId });
      }
    }
  }

  /**
   * The PLC's row and whole chain: the records after `prefix` read from the database and appended
   * to it, or the whole chain read when there is no prefix or the suffix does not continue it
   * (which the append-only chain rules out; read whole rather than trust it).
   */
  async function readAfter(tokenId: string, prefix: KnownPrefix | undefined): Promise<PlcWithChain | null> {
    if (prefix === undefined || prefix.chainLength === 0) return getPlcWithChainFrom(pool, tokenId, 0);
    const after = await getPlcWithChainFrom(pool, tokenId, prefix.chainLength);
    if (after === null) return null;
    const continues =
      after.plc.commitment_hash === prefix.commitmentHash &&
      after.plc.chain_length === prefix.chainLength + after.known.length &&
      (after.known.length === 0 ? after.plc.head_hash === prefix.headHash : after.known[0]?.prevHash === prefix.headHash);
    if (!continues) return getPlcWithChainFrom(pool, tokenId, 0);
    return { plc: after.plc, known: [...prefix.known, ...after.known] };
  }

  return {
    registerTransfers,
    rememberIssued: (plc) =>
      registeredChains.rememberIssued({
        tokenId: plc.commitment.tokenId,
        commitmentHash: plc.commitmentHash,
        issuerSignature: plc.issuerSignature,
        expiresAtMs: plc.commitment.expiresAtMs,
      }),
  };
}

/**
 * The append of a chain's last record on the assumption that the records before it are the ones
 * registered, made without reading the PLC: only that record is verified (with the presented
 * records before it taken as verified) and the database appends it only if the stored PLC is
 * exactly the presented one without it (db/plcs.ts, `PendingAppend.presented`), alive and
 * transferable. Null when the presented PLC gives no such append (no record, a verification
 * failure, a record from the future, expired): the read path then answers, with the refusal a
 * whole verification gives.
 */
function lastHopAppend(plc: Plc, deviceId: string, toleranceMs: number): PendingAppend | null {
  const chain = plc.transferChain;
  const last = chain.at(-1);
  if (last === undefined) return null;
  const before = chain.slice(0, -1).map((record) => ({ hash: computeRecordHash(record), signature: record.signature }));
  const verification = verifyPlc(plc, { clockToleranceMs: toleranceMs, verifySignature: nodeVerifyEd25519, verifiedPrefix: { issuerSignature: plc.issuerSignature, records: before } });
  const nowMs = Date.now();
  if (!verification.ok || !checkRecordClock(chain, nowMs, { clockToleranceMs: toleranceMs }).ok || nowMs > expiryDueAtMs(plc.commitment.expiresAtMs, toleranceMs)) return null;
  const record = fromTransferRecord(last);
  const readLength = chain.length - 1;
  return {
    read: {
      token_id: plc.commitment.tokenId,
      // A PLC without a hop is ISSUED (the compare-and-set on the length makes it so).
      status: readLength === 0 ? 'ISSUED' : 'TRANSFERRED',
      chain_length: readLength,
      head_hash: bytesToHex(before.at(-1)?.hash ?? plc.commitmentHash),
    },
    decision: { kind: 'extend', records: [{ ...record, position: readLength }], headHash: record.recordHash, bearerPubkey: record.recipientPubkey, chainLength: chain.length },
    deviceId,
    presented: {
      commitmentHash: bytesToHex(plc.commitmentHash),
      issuerSignature: bytesToHex(plc.issuerSignature),
      prefixSignatures: before.map((record) => bytesToHex(record.signature)).join(''),
    },
  };
}

/** A chain known to be the start of a PLC's registered chain. */
interface KnownPrefix {
  commitmentHash: string;
  chainLength: number;
  headHash: string;
  known: readonly KnownRecord[];
}

function registration(plc: Pick<PlcRow, 'token_id' | 'status' | 'chain_length' | 'bearer_pubkey' | 'head_hash'>, appended: number): TransferRegistration {
  return {
    token_id: plc.token_id,
    status: plc.status,
    chain_length: plc.chain_length,
    bearer_pubkey: plc.bearer_pubkey,
    head_hash: plc.head_hash,
    appended,
  };
}

function verifiedPrefixOf(stored: PlcWithChain): VerifiedPrefix {
  return {
    issuerSignature: hexToBytes(stored.plc.signature, 64),
    records: stored.known.map((record) => ({ hash: hexToBytes(record.recordHash, 32), signature: hexToBytes(record.signature, 64) })),
  };
}
