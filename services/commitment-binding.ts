import { blockKey } from '../db/blocklist.ts';
import { evidenceOfFlag, keepEvidence, type PlcEvidenceRow } from '../db/plc-evidence.ts';
import { getPlcWithChainFrom, type PlcWithChain } from '../db/plcs.ts';
import { withTransaction, type Pool, type PoolClient } from '../db/pool.ts';
import { raiseRiskFlag } from '../db/risk-flags.ts';
import { reportCommitted } from '../db/committed.ts';
import { DomainError } from '../src/errors.ts';
import {
  bindCommitment,
  cancelAfterTransferFlagKey,
  doubleIssueEvidence,
  doubleIssueFlagKey,
  type RegisteredCommitment,
} from '../src/plc/commitment-binding.ts';
import { bytesToHex, computeRecordHash, plcToJson, type Plc } from '../src/protocol/index.ts';
import { onKeyBlocked } from './blocklist.ts';
import type { ChainRoute } from './fork-check.ts';

/**
 * The one function every path that takes a chain calls first, right after verifying it
 * (docs/plc.md, "The registered commitment binds every path"): the presented commitment against
 * the one registered under its token id, by canonical hash (src/plc/commitment-binding.ts).
 *
 * - Another key's commitment under a registered token id: 409 `PLC_MISMATCH`
 *   (`reason: foreign_commitment`); nothing moves, nothing is recorded against anyone.
 * - A second commitment the registered issuer signed: 409 `PLC_MISMATCH`
 *   (`reason: issuer_double_issue`) with the proof; the proof is kept (`plc_evidence`), a high
 *   `ISSUER_DOUBLE_ISSUE` flag names the issuer, and the issuer's key is blocked, in one
 *   transaction (docs/protocol.md section 18).
 * - The registered commitment, CANCELLED, with a chain whose first record the issuer signed: 409
 *   `PLC_CANCELLED_AFTER_TRANSFER`; the chain is kept as evidence, a high
 *   `CANCEL_AFTER_TRANSFER` flag names the issuer and its key is blocked, in one transaction; an
 *   operator may compensate the bearer (reconcile tool `compensate-cancelled-bearers`).
 *
 * Answers the registered PLC and its chain, from which the caller reads amount, currency, expiry
 * and issuer: never from the presented commitment.
 */

export interface ChainShown {
  route: ChainRoute;
  deviceId: string;
}

export function registeredCommitmentOfRow(row: PlcWithChain['plc']): RegisteredCommitment {
  return {
    tokenId: row.token_id,
    version: row.version,
    issuerPubkey: row.issuer_pubkey,
    amountMinor: row.amount_minor,
    currency: row.currency,
    createdAtMs: row.created_at_ms,
    expiresAtMs: row.expires_at_ms,
    nonce: row.nonce,
    commitmentHash: row.commitment_hash,
    signature: row.signature,
  };
}

/**
 * Binds a verified presented PLC to its registered commitment (read here unless the caller has
 * read it); refuses as the header says. 404 `PLC_NOT_FOUND` when nothing is registered.
 */
export async function bindToRegistered(pool: Pool, plc: Plc, shown: ChainShown, stored?: PlcWithChain | null): Promise<PlcWithChain> {
  const tokenId = plc.commitment.tokenId;
  const registered = stored === undefined ? await getPlcWithChainFrom(pool, tokenId, 0) : stored;
  if (registered === null) throw new DomainError('PLC_NOT_FOUND', 'no such PLC: it must be created first', { token_id: tokenId });
  const commitment = registeredCommitmentOfRow(registered.plc);
  const binding = bindCommitment(commitment, plc);
  switch (binding.kind) {
    case 'foreign':
      throw new DomainError(
        'PLC_MISMATCH',
        'this PLC is not the one registered under its token id: its commitment was signed by another key; it is worth nothing here',
        { token_id: tokenId, reason: 'foreign_commitment', registered_commitment_hash: commitment.commitmentHash },
      );
    case 'double_issue':
      return refuseDoubleIssue(pool, commitment, plc, shown);
    case 'same':
      if (registered.plc.status === 'CANCELLED' && plc.transferChain.length > 0) return refuseCancelAfterTransfer(pool, registered, plc, shown);
      return registered;
  }
}

async function refuseDoubleIssue(pool: Pool, registered: RegisteredCommitment, plc: Plc, shown: ChainShown): Promise<never> {
  const evidence = doubleIssueEvidence(registered, plc);
  const { kept, block } = await withTransaction(pool, async (tx) => {
    const flag = await raiseRiskFlag(tx, {
      flagType: 'ISSUER_DOUBLE_ISSUE',
      severity: 'high',
      subjectPubkey: registered.issuerPubkey,
      tokenId: registered.tokenId,
      dedupeKey: doubleIssueFlagKey(evidence),
      details: { ...evidence, route: shown.route, device_id: shown.deviceId },
    });
    const kept = await keepEvidence(tx, {
      kind: 'ISSUER_DOUBLE_ISSUE',
      tokenId: registered.tokenId,
      culpritPubkey: registered.issuerPubkey,
      riskFlagId: flag.id,
      evidence: { ...evidence },
      bearerPubkey: null,
      chainLength: 0,
      amountMinor: registered.amountMinor,
      currency: registered.currency,
      route: shown.route,
      deviceId: shown.deviceId,
    });
    const blocked = await blockKey(tx, {
      pubkey: registered.issuerPubkey,
      ownerId: registered.issuerPubkey,
      riskFlagId: flag.id,
      tokenId: registered.tokenId,
      route: shown.route,
      reason: 'ISSUER_DOUBLE_ISSUE',
    });
    if (blocked.created) await onKeyBlocked(tx, blocked.entry);
    return { kept, block: blocked.entry };
  });
  reportCommitted(pool, { kind: 'fork_detected', route: `${shown.route}:double_issue` });
  throw new DomainError(
    'PLC_MISMATCH',
    "this PLC's issuer signed another commitment under the same token id: a double issue. The registered one is the only one; this one is worth nothing here, and the proof was recorded",
    {
      ...evidence,
      reason: 'issuer_double_issue',
      ...evidenceRefs(kept, block),
    },
  );
}

async function refuseCancelAfterTransfer(pool: Pool, registered: PlcWithChain, plc: Plc, shown: ChainShown): Promise<never> {
  const row = registered.plc;
  const first = plc.transferChain[0];
  const last = plc.transferChain.at(-1);
  if (first === undefined || last === undefined) throw new Error('a cancel after transfer needs a chain');
  const firstHash = bytesToHex(computeRecordHash(first));
  const bearer = bytesToHex(last.recipientPublicKey);
  const chainJson = plcToJson(plc).transfer_chain;
  const { kept, block } = await withTransaction(pool, async (tx) => {
    const flag = await raiseRiskFlag(tx, {
      flagType: 'CANCEL_AFTER_TRANSFER',
      severity: 'high',
      subjectPubkey: row.issuer_pubkey,
      tokenId: row.token_id,
      dedupeKey: cancelAfterTransferFlagKey(row.token_id, firstHash),
      details: { token_id: row.token_id, issuer_pubkey: row.issuer_pubkey, first_record_hash: firstHash, bearer_pubkey: bearer, route: shown.route },
    });
    // A later holder's longer chain replaces the kept one only when it extends it (the kept
    // chain is then its prefix): the bearer to compensate is the last one the PLC reached.
    const previous = await keepEvidenceIfExtends(tx, flag.id, plc);
    const kept =
      previous ??
      (await keepEvidence(tx, {
        kind: 'CANCEL_AFTER_TRANSFER',
        tokenId: row.token_id,
        culpritPubkey: row.issuer_pubkey,
        riskFlagId: flag.id,
        evidence: {
          token_id: row.token_id,
          commitment_hash: row.commitment_hash,
          issuer_pubkey: row.issuer_pubkey,
          cancelled_at: row.status_changed_at.toISOString(),
          transfer_chain: chainJson,
        },
        bearerPubkey: bearer,
        chainLength: plc.transferChain.length,
        amountMinor: row.amount_minor,
        currency: row.currency,
        route: shown.route,
        deviceId: shown.deviceId,
      }));
    const blocked = await blockKey(tx, {
      pubkey: row.issuer_pubkey,
      ownerId: row.issuer_owner_id,
      riskFlagId: flag.id,
      tokenId: row.token_id,
      route: shown.route,
      reason: 'CANCEL_AFTER_TRANSFER',
    });
    if (blocked.created) await onKeyBlocked(tx, blocked.entry);
    return { kept, block: blocked.entry };
  });
  throw new DomainError(
    'PLC_CANCELLED_AFTER_TRANSFER',
    "this PLC's issuer cancelled it online after signing it over: its reservation went back to the issuer. The chain you hold is recorded as evidence against the issuer (flagged, key blocked); an operator can compensate the bearer from the issuer's balance",
    {
      token_id: row.token_id,
      issuer_pubkey: row.issuer_pubkey,
      cancelled_at: row.status_changed_at.toISOString(),
      first_record_hash: firstHash,
      recorded: true,
      bearer_pubkey: kept.bearer_pubkey,
      ...evidenceRefs(kept, block),
    },
  );
}

/**
 * The evidence kept for this flag, replaced by the presented chain when that chain extends it
 * (strictly longer, the kept chain's record hashes its prefix); null when none is kept yet. A chain
 * that does not extend the kept one (older, or another branch) leaves it as it is.
 */
async function keepEvidenceIfExtends(tx: PoolClient, flagId: string, plc: Plc): Promise<PlcEvidenceRow | null> {
  const current = await evidenceOfFlag(tx, flagId);
  if (current === null) return null;
  const kept = current.evidence.transfer_chain;
  if (!Array.isArray(kept)) return current;
  const presentedHashes = plc.transferChain.map((record) => bytesToHex(computeRecordHash(record)));
  const extendsKept =
    presentedHashes.length > kept.length && kept.every((record: unknown, index) => (record as { hash?: unknown }).hash === presentedHashes[index]);
  const last = plc.transferChain.at(-1);
  if (!extendsKept || last === undefined) return current;
  return keepEvidence(tx, {
    kind: 'CANCEL_AFTER_TRANSFER',
    tokenId: current.token_id,
    culpritPubkey: current.culprit_pubkey,
    riskFlagId: flagId,
    evidence: { ...current.evidence, transfer_chain: plcToJson(plc).transfer_chain },
    bearerPubkey: bytesToHex(last.recipientPublicKey),
    chainLength: plc.transferChain.length,
    amountMinor: current.amount_minor,
    currency: current.currency,
    route: current.route,
    deviceId: current.device_id,
  });
}

function evidenceRefs(kept: PlcEvidenceRow, block: { id: string; lifted_at: Date | null }) {
  return { evidence_id: kept.id, risk_flag_id: kept.risk_flag_id, key_block_id: block.id, key_blocked: block.lifted_at === null };
}
