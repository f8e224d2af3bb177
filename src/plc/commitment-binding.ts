import { bytesToHex, encodeCommitment, hexToBytes, type Plc, type PlcCommitment } from '../protocol/index.ts';

/**
 * The registered commitment is the only commitment (docs/plc.md, "The registered commitment
 * binds every path"). A PLC is registered once, at its create, under its token id; every later
 * path that takes a chain for that token id (transfer, redeem, settlements, POS sync) compares the
 * presented commitment with the registered one, by its canonical hash, before any other decision.
 *
 * Decided purely from the two commitments (the presented one already verified: its issuer's
 * signature holds; the registered one was verified at its create):
 *
 * - `same`: the presented PLC is the registered one; the caller goes on.
 * - `double_issue`: the same issuer key signed two different commitments under one token id. Both
 *   signatures are valid, so the pair is its own proof of the issuer's cheat (two payees offline
 *   for one reservation). Refused, kept as evidence, flagged, the issuer key blocked.
 * - `foreign`: another key signed a commitment under a token id it does not own (a stranger who
 *   read the token id from a public list). Refused; it proves nothing against the registered
 *   issuer, and nothing is recorded against anyone (anyone can make such a commitment for free).
 *
 * Amount, currency, expiry and the issuer are read from the registered commitment only once the
 * binding holds: a presented commitment never prices or pays anything.
 */

export type CommitmentBinding = { kind: 'same' } | { kind: 'double_issue'; issuerPubkey: string } | { kind: 'foreign'; presentedIssuerPubkey: string };

/** What the server registered for a token id (a `plcs` row's commitment columns). */
export interface RegisteredCommitment {
  tokenId: string;
  version: '2.0';
  issuerPubkey: string;
  amountMinor: bigint;
  currency: string;
  createdAtMs: bigint | number;
  expiresAtMs: bigint | number;
  nonce: string;
  commitmentHash: string;
  signature: string;
}

export function bindCommitment(registered: Pick<RegisteredCommitment, 'commitmentHash' | 'issuerPubkey'>, presented: Plc): CommitmentBinding {
  if (bytesToHex(presented.commitmentHash) === registered.commitmentHash) return { kind: 'same' };
  const presentedIssuer = bytesToHex(presented.commitment.issuerPublicKey);
  if (presentedIssuer === registered.issuerPubkey) return { kind: 'double_issue', issuerPubkey: presentedIssuer };
  return { kind: 'foreign', presentedIssuerPubkey: presentedIssuer };
}

/** The registered commitment as the protocol's structure (to rebuild its canonical bytes). */
export function registeredCommitmentOf(registered: RegisteredCommitment): PlcCommitment {
  return {
    version: registered.version,
    tokenId: registered.tokenId,
    issuerPublicKey: hexToBytes(registered.issuerPubkey, 32),
    amountMinor: registered.amountMinor,
    currency: registered.currency,
    createdAtMs: Number(registered.createdAtMs),
    expiresAtMs: Number(registered.expiresAtMs),
    nonce: hexToBytes(registered.nonce, 16),
  };
}

/**
 * The proof of a double issue, checkable offline by anyone who trusts neither side: both
 * commitments' canonical bytes (docs/protocol.md section 3) and the issuer's signature over each
 * one's SHA-256. Verify: both canonical forms decode, carry the same token id and issuer key,
 * differ, and both signatures verify under that key.
 */
export interface DoubleIssueEvidence {
  token_id: string;
  issuer_pubkey: string;
  registered_commitment: string;
  registered_commitment_hash: string;
  registered_signature: string;
  presented_commitment: string;
  presented_commitment_hash: string;
  presented_signature: string;
}

export function doubleIssueEvidence(registered: RegisteredCommitment, presented: Plc): DoubleIssueEvidence {
  return {
    token_id: registered.tokenId,
    issuer_pubkey: registered.issuerPubkey,
    registered_commitment: bytesToHex(encodeCommitment(registeredCommitmentOf(registered))),
    registered_commitment_hash: registered.commitmentHash,
    registered_signature: registered.signature,
    presented_commitment: bytesToHex(encodeCommitment(presented.commitment)),
    presented_commitment_hash: bytesToHex(presented.commitmentHash),
    presented_signature: bytesToHex(presented.issuerSignature),
  };
}

/** One double issue is one pair of commitments: shown again, it counts on the same flag. */
export function doubleIssueFlagKey(evidence: Pick<DoubleIssueEvidence, 'token_id' | 'presented_commitment_hash'>): string {
  return `double-issue:${evidence.token_id}:${evidence.presented_commitment_hash}`;
}

/**
 * A chain presented for a CANCELLED PLC whose first record its issuer signed: the issuer paid
 * someone offline, then cancelled online and took the reservation back. The first record (signed
 * by the issuer, linking to the registered commitment) is the proof; the rest of the chain shows
 * who holds it now.
 */
export function cancelAfterTransferFlagKey(tokenId: string, firstRecordHash: string): string {
  return `cancel-after-transfer:${tokenId}:${firstRecordHash}`;
}
