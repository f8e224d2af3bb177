/**
 * The committed test vectors (test/src/protocol/vectors/protocol-v2.json) are (1) exactly what the
 * generator produces from the current code, and (2) each checked on its own against the library,
 * the way an implementer in another language would use them.
 */
import { readFileSync } from 'node:fs';
import { sha256 } from '@noble/hashes/sha2.js';
import { describe, expect, it } from 'vitest';
import { buildProtocolVectors, vectorsPath } from '../../../scripts/gen-protocol-vectors.ts';
import {
  bytesToHex,
  checkRecordClock,
  computeCommitmentHash,
  decodeTransport,
  decodeTransportText,
  detectFork,
  encodeCancelMessage,
  encodeCommitment,
  encodeRecordHashInput,
  encodeRedeemMessage,
  encodeTransferMessage,
  encodeTransportText,
  generateKeyPair,
  hexToBytes,
  keyOperationMessage,
  openSealedPayload,
  parsePlcJson,
  plcToJson,
  verifyCancel,
  verifyForkEvidence,
  verifyKeyOperation,
  verifyPlc,
  verifyRedeem,
  verifySignature,
  type RejectionReason,
} from '../../../src/protocol/index.ts';

const committed = JSON.parse(readFileSync(vectorsPath, 'utf8'));
type Vectors = Awaited<ReturnType<typeof buildProtocolVectors>>;
const vectors = committed as Vectors;
const h = hexToBytes;

describe('protocol-v2.json', () => {
  it('equals what scripts/gen-protocol-vectors.ts builds from the current code (regenerate it after a protocol change)', async () => {
    expect(JSON.parse(JSON.stringify(await buildProtocolVectors()))).toEqual(committed);
  });

  it('can be rebuilt from the file and the document alone: labels for every seed and nonce, integers as integers, tags as bytes', () => {
    const labelled = (label: string, length: number): string =>
      bytesToHex(sha256(new TextEncoder().encode(`svc:plc:test-vector:${label}`)).slice(0, length));
    for (const [name, key] of Object.entries(vectors.keys)) expect(key.seed).toBe(labelled(`key:${name}`, 32));
    expect(vectors.plc.commitment.nonce).toBe(labelled(vectors.plc.commitment.nonce_label, 16));
    for (const transfer of vectors.plc.transfers) expect(transfer.nonce).toBe(labelled(transfer.nonce_label, 16));
    expect(vectors.sealed.nonce).toBe(labelled(vectors.sealed.nonce_label, 24));
    expect(vectors.plc.commitment.amount_minor).toBe(1234);
    expect(vectors.constants.amount_minor_max).toBe(10 ** 15);
    for (const tag of Object.values(vectors.constants.domain_tags)) {
      // The ASCII form is the tag itself, its final NUL included (written "\u0000" in the JSON).
      expect(bytesToHex(new TextEncoder().encode(tag.ascii))).toBe(tag.hex);
    }
    expect(vectors.constants.domain_tags.commitment?.ascii.endsWith('\0')).toBe(true);
  });

  it('derives each key from its seed', () => {
    for (const key of Object.values(vectors.keys)) {
      expect(bytesToHex(generateKeyPair(h(key.seed)).publicKey)).toBe(key.public_key);
    }
  });

  describe('the example PLC', () => {
    const plc = parsePlcJson(vectors.plc.json);
    const c = vectors.plc.commitment;

    it('has the documented canonical commitment bytes, hash and issuer signature', () => {
      const bytes = encodeCommitment(plc.commitment);
      expect(bytes.length).toBe(118);
      expect(bytesToHex(bytes)).toBe(c.canonical_bytes);
      expect(bytesToHex(computeCommitmentHash(plc.commitment))).toBe(c.commitment_hash);
      expect(verifySignature(h(c.issuer_signature), h(c.commitment_hash), h(c.issuer_pubkey))).toBe(true);
    });

    it('has the documented signed message, signature and hash for every record', () => {
      for (const [index, t] of vectors.plc.transfers.entries()) {
        const record = plc.transferChain[index]!;
        expect(bytesToHex(encodeTransferMessage(record))).toBe(t.signed_message);
        expect(verifySignature(h(t.signature), h(t.signed_message), h(t.sender_pubkey))).toBe(true);
        expect(bytesToHex(encodeRecordHashInput(record))).toBe(t.hash_input);
        expect(bytesToHex(record.hash)).toBe(t.hash);
      }
    });

    it('verifies, with alice as the bearer and the documented head hash', () => {
      const result = verifyPlc(plc);
      expect(result.ok).toBe(true);
      if (!result.ok) return;
      expect(bytesToHex(result.bearerPublicKey)).toBe(vectors.keys.alice.public_key);
      expect(bytesToHex(result.headHash)).toBe(vectors.plc.head_hash);
    });

    it('decodes from the transport CBOR and text to the same JSON form', () => {
      expect(plcToJson(decodeTransport(h(vectors.plc.transport.cbor)))).toEqual(vectors.plc.json);
      expect(plcToJson(decodeTransportText(vectors.plc.transport.text))).toEqual(vectors.plc.json);
      expect(encodeTransportText(plc)).toBe(vectors.plc.transport.text);
      expect(decodeTransportText(vectors.plc.transport.fresh_text).transferChain).toEqual([]);
    });
  });

  it('opens the sealed example with the recipient key and the documented key material', () => {
    const s = vectors.sealed;
    const opened = openSealedPayload({ recipientSecretKey: h(vectors.keys.bob.seed), sealed: h(s.sealed) });
    expect(bytesToHex(opened.plaintext)).toBe(s.plaintext);
    expect(bytesToHex(opened.senderPublicKey)).toBe(vectors.keys.alice.public_key);
    expect(s.sealed.slice(2 + 64, 2 + 64 + 48)).toBe(s.nonce);
  });

  it('verifies every authorisation message as documented', () => {
    const { cancel, redeem, backup, recover } = vectors.auth_messages;
    const alice = h(vectors.keys.alice.public_key);
    const cancelRequest = { tokenId: cancel.token_id, commitmentHash: h(cancel.commitment_hash), timestampMs: cancel.timestamp_ms };
    expect(bytesToHex(encodeCancelMessage(cancelRequest))).toBe(cancel.message);
    expect(verifyCancel({ ...cancelRequest, issuerPublicKey: alice, signature: h(cancel.signature) })).toBe(true);
    const redeemRequest = {
      tokenId: redeem.token_id,
      headHash: h(redeem.head_hash),
      settlementRail: redeem.settlement_rail,
      destination: redeem.destination,
      timestampMs: redeem.timestamp_ms,
    };
    expect(bytesToHex(encodeRedeemMessage(redeemRequest))).toBe(redeem.message);
    expect(verifyRedeem({ ...redeemRequest, bearerPublicKey: alice, signature: h(redeem.signature) })).toBe(true);
    for (const [kind, op] of [['backup', backup], ['recover', recover]] as const) {
      const operation = { deviceId: op.device_id, publicKey: h(op.public_key), operationTimestampMs: op.operation_timestamp };
      expect(keyOperationMessage(kind, operation)).toBe(op.message);
      expect(verifyKeyOperation(kind, { ...operation, signature: h(op.signature) })).toBe(true);
      expect(verifySignature(h(op.signature), h(op.message_hex), alice)).toBe(true);
    }
  });

  it('reports the fork example at the documented index with bob as the culprit', () => {
    const result = detectFork(parsePlcJson(vectors.fork.first), parsePlcJson(vectors.fork.second));
    expect(result.kind).toBe('fork');
    if (result.kind !== 'fork') return;
    expect(result.index).toBe(vectors.fork.expected.index);
    expect(bytesToHex(result.culpritPublicKey)).toBe(vectors.fork.expected.culprit_pubkey);
    expect(verifyForkEvidence(result.evidence)).toBe(true);
  });

  it('checks the example chain against each documented server clock (section 7.4)', () => {
    const plc = parsePlcJson(vectors.plc.json);
    expect(vectors.record_clock.cases.length).toBeGreaterThanOrEqual(4);
    for (const c of vectors.record_clock.cases) {
      const check = checkRecordClock(plc.transferChain, c.now_ms, { clockToleranceMs: vectors.record_clock.clock_tolerance_ms });
      expect(check.ok ? { ok: true } : { ok: false, reason: check.reason, index: check.index }, c.description).toEqual(c.expected);
    }
  });

  describe('invalid chains', () => {
    it('cover every reason reachable through the JSON form', () => {
      const covered = new Set(vectors.invalid_chains.map((vector) => vector.expected.reason));
      const reachable: RejectionReason[] = [
        'invalid_ttl',
        'invalid_public_key',
        'commitment_hash_mismatch',
        'invalid_issuer_signature',
        'broken_link',
        'wrong_sender',
        'self_transfer',
        'timestamp_out_of_range',
        'timestamp_decreasing',
        'duplicate_nonce',
        'record_hash_mismatch',
        'invalid_signature',
      ];
      expect([...covered].sort()).toEqual([...reachable].sort());
    });

    for (const vector of vectors.invalid_chains) {
      it(`${vector.name}: ${vector.expected.reason} at ${vector.expected.index ?? 'the commitment'}`, () => {
        const result = verifyPlc(parsePlcJson(vector.plc));
        expect(result.ok).toBe(false);
        if (result.ok) return;
        expect({ reason: result.reason, index: result.index }).toEqual(vector.expected);
      });
    }
  });
});
