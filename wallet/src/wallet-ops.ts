/**
 * What the wallet does with PLCs, on the project's one protocol library (src/protocol): decide
 * whether a received PLC is accepted (everything a receiver can check offline), sign a hop to
 * another wallet, and describe a PLC's state for this wallet. Every refusal carries a sentence a
 * person understands; the protocol's own reason stays beside it for support.
 */
import {
  appendTransfer,
  bytesEqual,
  bytesToHex,
  checkExpiry,
  checkRecordClock,
  currentBearer,
  decodeTransport,
  decodeTransportText,
  detectFork,
  isBlocked,
  isProtocolError,
  hexToBytes,
  parsePlcJson,
  plcToJson,
  receiptTrustOf,
  transportTextPrefix,
  verifyPlc,
  verifyPlcReceipt,
  withIssueReceipt,
  type Plc,
  type PlcJson,
  type ReceiptRejectionReason,
  type RejectionReason,
  type SignedBlocklist,
} from '../../src/protocol/index.ts';
import type { TokenRecord } from './records.ts';

export interface Refusal {
  readonly ok: false;
  /** A stable code (the tests and support read it). */
  readonly code: string;
  /** What the person holding the phone is told. */
  readonly message: string;
  /** The protocol's own reason, when it differs from the code (an issue receipt's refusal). */
  readonly reason?: string;
}
export interface Accepted {
  readonly ok: true;
  readonly plc: Plc;
  /** The stored copy this chain extends, if the wallet knew the PLC. */
  readonly known: TokenRecord | undefined;
}

const refuse = (code: string, message: string): Refusal => ({ ok: false, code, message });

const verificationMessages: Partial<Record<RejectionReason, string>> = {
  invalid_issuer_signature: 'The issuer\'s signature is not valid: this PLC was forged or altered. Do not accept it.',
  invalid_signature: 'A payer\'s signature in the chain is not valid: this PLC was forged or altered. Do not accept it.',
  commitment_hash_mismatch: 'The PLC\'s terms were altered after it was signed. Do not accept it.',
  record_hash_mismatch: 'A hop of the chain was altered after it was signed. Do not accept it.',
  broken_link: 'The chain of payments is broken: a hop does not follow the one before it.',
  wrong_sender: 'A hop was signed by someone who did not hold the PLC at the time.',
  duplicate_nonce: 'The chain repeats a hop: it was tampered with.',
  chain_too_long: 'This PLC has been passed on too many times (32 is the most); it must be redeemed.',
  timestamp_decreasing: 'The hops of the chain are not in time order: the chain was tampered with.',
  timestamp_out_of_range: 'A hop is dated outside the PLC\'s life.',
  self_transfer: 'A hop pays the same wallet that signed it, which the protocol does not allow.',
};

/** Decodes what a QR code or a paste carried: the PLC2: text form, the binary transport form, or JSON. */
export function decodePayload(payload: string | Uint8Array): Plc | Refusal {
  try {
    if (payload instanceof Uint8Array) return decodeTransport(payload);
    const text = payload.trim();
    if (text.startsWith(transportTextPrefix)) return decodeTransportText(text);
    if (text.startsWith('{')) return parsePlcJson(JSON.parse(text));
  } catch (error) {
    return refuse('unreadable', `This is not a readable PLC (${isProtocolError(error) ? error.code : 'bad data'}). Ask the payer to show it again.`);
  }
  return refuse('not_a_plc', 'This code is not a PLC payment. Scan the code the payer\'s wallet shows after "Pay".');
}

/**
 * What a person is told when a PLC's issue receipt (docs/protocol.md section 19) is refused. Every
 * one ends in a refusal: without a valid receipt nothing shows the service ever registered the PLC
 * and set its amount aside, so it may be worth nothing (a PLC signed but never issued online, or a
 * second PLC its issuer signed under the number of one already issued).
 */
const receiptMessages: Record<ReceiptRejectionReason, string> = {
  missing:
    'Refused: this PLC carries no receipt from the service, so nothing shows it was ever issued online and its amount set aside. It may be a copy its issuer never backed. Ask the payer for a PLC issued online.',
  truncated: 'Refused: the service\'s receipt this PLC carries is cut short, so nothing shows it was issued online. Ask the payer to show it again.',
  malformed: 'Refused: the service\'s receipt this PLC carries is not readable, so nothing shows it was issued online.',
  wrong_commitment:
    'Refused: the service\'s receipt this PLC carries was made for a different PLC. Its issuer may have signed two PLCs under one number; only the one issued online is backed.',
  untrusted_key:
    'Refused: the service\'s receipt is signed by a key this wallet does not trust (unknown, or withdrawn by the service). If you are sure the PLC is genuine, refresh the blocklist online and try again.',
  wrong_key: 'Refused: the service\'s receipt on this PLC is forged or altered (its signature does not verify).',
  key_not_valid_at_time:
    'Refused: the service\'s receipt on this PLC was signed outside the period its key was valid for (a withdrawn key). Refresh the blocklist online if the service changed its keys.',
};

/**
 * The service's issue receipt check, on the protocol's own verifier: the keys trusted for receipts
 * are those of the kept signed blocklist (format v2 lists them, with validity periods; a key it
 * leaves out is revoked), or, while the wallet keeps none, the service key it trusts for the list.
 */
export function receiptRefusal(plc: Plc, blocklist: SignedBlocklist | undefined, trustedServiceKey: Uint8Array): Refusal | null {
  const verdict = verifyPlcReceipt(plc, receiptTrustOf(blocklist, trustedServiceKey));
  if (verdict.ok) return null;
  return { ok: false, code: 'unbacked', reason: verdict.reason, message: receiptMessages[verdict.reason] };
}

/**
 * Attaches to an issued PLC (its JSON form, as kept) the receipt the service answered for it, once
 * the receipt verifies against the keys this wallet trusts; answers the refusal otherwise (the PLC
 * is kept without it: receivers would refuse it, so the wallet asks again when online).
 */
export function attachIssueReceipt(
  json: PlcJson,
  receiptHex: unknown,
  blocklist: SignedBlocklist | undefined,
  trustedServiceKey: Uint8Array,
): { ok: true; json: PlcJson } | Refusal {
  if (typeof receiptHex !== 'string' || !/^(?:[0-9a-f]{2})+$/.test(receiptHex)) {
    return receiptRefusal(parsePlcJson({ ...json, issue_receipt: undefined }), blocklist, trustedServiceKey)!;
  }
  const plc = withIssueReceipt(parsePlcJson({ ...json, issue_receipt: undefined }), hexToBytes(receiptHex));
  const refusal = receiptRefusal(plc, blocklist, trustedServiceKey);
  return refusal ?? { ok: true, json: plcToJson(plc) };
}

export interface ReceiveContext {
  readonly ownKeyHex: string;
  readonly nowMs: number;
  /** The kept signed blocklist, verified against the trusted service key; undefined when none is kept. */
  readonly blocklist: SignedBlocklist | undefined;
  /** The service key this wallet trusts for the blocklist (and for receipts while it keeps no v2 list). */
  readonly trustedServiceKey: Uint8Array;
  /** This wallet's stored copy of the same token id, if any. */
  readonly known: TokenRecord | undefined;
}

/**
 * Everything a receiver verifies offline, in one place: the issuer's signature and every hop's
 * (signatures, links, hashes, order), the expiry, the clocks, that the last hop pays this wallet,
 * the kept blocklist, the service's issue receipt (docs/protocol.md section 19: a valid receipt
 * from a key the kept blocklist trusts, else `unbacked`), and what this wallet already knows of
 * the token (a fork, an older state).
 *
 * The receipt is checked after the checks whose refusal says more (forged, expired, not for this
 * wallet, a blocked signer): a PLC that fails one of them is refused either way, and the person is
 * told the most specific reason. It is checked before what the wallet knows of the token id, so a
 * second commitment under a known token id is refused as unbacked whatever this wallet holds.
 */
export function verifyReceived(plc: Plc, context: ReceiveContext): Accepted | Refusal {
  const verification = verifyPlc(plc);
  if (!verification.ok) {
    return refuse(verification.reason, verificationMessages[verification.reason] ?? `This PLC is not valid (${verification.reason}): do not accept it.`);
  }
  const expiry = checkExpiry(plc.commitment, context.nowMs);
  if (!expiry.ok) {
    return expiry.reason === 'expired'
      ? refuse('expired', 'This PLC has expired: its issuer no longer owes it. Ask for another payment.')
      : refuse('not_yet_valid', 'This PLC is dated in the future: check the clock of this phone and of the payer\'s.');
  }
  const clock = checkRecordClock(plc.transferChain, context.nowMs);
  if (!clock.ok) return refuse('timestamp_in_future', 'The payment is dated in the future: check the clock of this phone and of the payer\'s.');
  if (plc.transferChain.length === 0) return refuse('nothing_to_receive', 'This PLC was not paid to anyone yet: the payer must pay it to this wallet first.');
  if (bytesToHex(verification.bearerPublicKey) !== context.ownKeyHex) {
    return refuse('not_addressed_to_this_wallet', `This payment is for another wallet (${bytesToHex(verification.bearerPublicKey).slice(0, 8)}…), not this one. The payer must scan this wallet's receive code.`);
  }
  if (context.blocklist !== undefined) {
    const signers = [plc.commitment.issuerPublicKey, ...plc.transferChain.map((record) => record.senderPublicKey)];
    const blocked = signers.find((key) => isBlocked(context.blocklist!, key));
    if (blocked !== undefined) {
      const who = bytesEqual(blocked, plc.commitment.issuerPublicKey) ? 'its issuer' : 'one of its payers';
      return refuse('blocked_signer', `Refused: ${who} (${bytesToHex(blocked).slice(0, 8)}…) is on the service's blocklist for spending a PLC twice.`);
    }
  }
  const unbacked = receiptRefusal(plc, context.blocklist, context.trustedServiceKey);
  if (unbacked !== null) return unbacked;
  const known = context.known;
  if (known !== undefined) {
    const knownPlc = parsePlcJson(known.plc);
    const comparison = detectFork(knownPlc, plc);
    switch (comparison.kind) {
      case 'different_plc':
        return refuse('token_conflict', 'This wallet knows a different PLC under the same token id: one of them is a copy made to cheat. Refused.');
      case 'identical':
        return refuse('already_received', 'This wallet already holds exactly this payment.');
      case 'behind':
        return refuse('stale_chain', 'This is an older state of a PLC this wallet has seen move on: it was already spent.');
      case 'unrelated':
        return refuse('rejected', 'This chain does not continue the one this wallet knows for the same PLC.');
      case 'fork':
        return refuse('fork_detected', `Double spend: ${bytesToHex(comparison.culpritPublicKey).slice(0, 8)}… paid this PLC twice. Refused.`);
      case 'extends':
        break;
    }
  }
  return { ok: true, plc, known };
}

/** Signs the hop that pays `plc` to `recipient`; the caller saves the result before showing it. */
export function payHop(plc: Plc, secretKey: Uint8Array, recipient: Uint8Array, nowMs: number): Plc {
  const last = plc.transferChain.at(-1);
  // Timestamps never decrease along a chain: a clock behind the previous holder's is corrected up.
  const timestampMs = Math.max(nowMs, last?.timestampMs ?? plc.commitment.createdAtMs);
  return appendTransfer(plc, { senderSecretKey: secretKey, recipientPublicKey: recipient, timestampMs });
}

export type HolderState = 'held' | 'issued, not paid out' | 'paid away' | 'expired' | 'redeeming' | 'redeemed' | 'redeem failed';

export function stateOf(token: TokenRecord, ownKeyHex: string, nowMs: number): HolderState {
  const plc = parsePlcJson(token.plc);
  const redeem = token.redeem;
  if (redeem?.status === 'SETTLED') return 'redeemed';
  if (redeem !== null && redeem.outcome !== 'refused' && redeem.status !== 'FAILED') return 'redeeming';
  const bearerHex = bytesToHex(currentBearer(plc));
  if (bearerHex !== ownKeyHex) return 'paid away';
  if (!checkExpiry(plc.commitment, nowMs).ok) return 'expired';
  if (redeem?.status === 'FAILED') return 'redeem failed';
  return plc.transferChain.length === 0 ? 'issued, not paid out' : 'held';
}

export { plcToJson, parsePlcJson };
