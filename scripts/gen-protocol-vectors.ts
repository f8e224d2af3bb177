/**
 * Writes test/src/protocol/vectors/protocol-v2.json: the offline protocol's test vectors, built from
 * fixed seeds so that every run gives the same bytes (Ed25519 signing is deterministic).
 *
 *   npx node scripts/gen-protocol-vectors.ts
 *
 * test/src/protocol/vectors.test.ts rebuilds the vectors in memory and compares them with the
 * committed file, so the code, the file and docs/protocol.md cannot drift apart silently.
 *
 * Every key here is a throwaway test key: its seed is SHA-256 of a public label.
 */
import { writeFileSync } from 'node:fs';
import { sha256 } from '@noble/hashes/sha2.js';
import {
  amountMinorMax,
  appendTransfer,
  base45Encode,
  bytesToHex,
  chainLengthMax,
  checkRecordClock,
  clockToleranceMsDefault,
  computeCommitmentHash,
  computeRecordHash,
  createPlc,
  currencyDecimals,
  detectFork,
  deriveSealedKeyMaterial,
  domainTags,
  encodeCancelMessage,
  encodeCommitment,
  encodeRecordHashInput,
  encodeRedeemMessage,
  encodeTransferMessage,
  encodeTransport,
  encodeTransportText,
  generateKeyPair,
  hexToBytes,
  keyOperationMessage,
  parsePlcJson,
  plcToJson,
  qrAlphanumericCharsMax,
  sealPayload,
  sign,
  signCancel,
  signKeyOperation,
  signRedeem,
  signTransferRecord,
  smallOrderPointEncodings,
  transportHopsMax,
  transportTextPrefix,
  ttlMsMax,
  ttlMsMin,
  verifyPlc,
  type KeyPair,
  type Plc,
  type PlcJson,
  type RejectionReason,
  type TransferRecord,
} from '../src/protocol/index.ts';
import * as ed from '@noble/ed25519';
import { ed25519 } from '@noble/curves/ed25519.js';
import { craftedCaseMessage, craftedCasesWithVerdicts, type VerifierName } from './ed25519-crafted-cases.ts';

export const vectorsPath = new URL('../test/src/protocol/vectors/protocol-v2.json', import.meta.url);

const labelEncoder = new TextEncoder();

/** A throwaway 32-byte value: SHA-256 of a public label. */
export function vectorBytes(label: string, length = 32): Uint8Array {
  const digest = sha256(labelEncoder.encode(`svc:plc:test-vector:${label}`));
  if (length > digest.length) throw new Error(`vectorBytes: at most ${digest.length} bytes`);
  return digest.slice(0, length);
}

export function vectorKey(name: string): KeyPair {
  return generateKeyPair(vectorBytes(`key:${name}`));
}

export const vectorNames = ['alice', 'bob', 'carol', 'dave'] as const;
type Name = (typeof vectorNames)[number];

const hourMs = 3_600_000;
export const vectorCreatedAtMs = Date.UTC(2026, 10, 22, 10, 0, 0, 0);
export const vectorTokenId = '4f0c2b1e-7d3a-4c5b-9e8f-0a1b2c3d4e5f';

function keysByName(): Record<Name, KeyPair> {
  return Object.fromEntries(vectorNames.map((name) => [name, vectorKey(name)])) as Record<Name, KeyPair>;
}

/** The vectors' PLC as alice issues it: 12.34 BRL for 24 hours, no hops yet. */
function issueVectorPlc(keys: Record<Name, KeyPair>): Plc {
  return createPlc({
    issuerSecretKey: keys.alice.secretKey,
    amountMinor: 1234n,
    currency: 'BRL',
    createdAtMs: vectorCreatedAtMs,
    ttlHours: 24,
    tokenId: vectorTokenId,
    nonce: vectorBytes('nonce:commitment', 16),
  });
}

/** alice issues 12.34 BRL for 24 hours, then alice -> bob -> carol -> alice, one hour apart. */
export function buildVectorPlc(keys: Record<Name, KeyPair> = keysByName()): Plc {
  let plc = issueVectorPlc(keys);
  const hops: [Name, Name][] = [
    ['alice', 'bob'],
    ['bob', 'carol'],
    ['carol', 'alice'],
  ];
  for (const [index, [from, to]] of hops.entries()) {
    plc = appendTransfer(plc, {
      senderSecretKey: keys[from].secretKey,
      recipientPublicKey: keys[to].publicKey,
      timestampMs: vectorCreatedAtMs + (index + 1) * hourMs,
      nonce: vectorBytes(`nonce:transfer:${index}`, 16),
    });
  }
  return plc;
}

function hexOf(text: string): string {
  return bytesToHex(labelEncoder.encode(text));
}

/** A copy of the JSON form with one change applied (structuredClone keeps the original intact). */
function mutateJson(json: PlcJson, change: (copy: PlcJson) => void): PlcJson {
  const copy = structuredClone(json);
  change(copy);
  return copy;
}

function withChain(plc: Plc, transferChain: readonly TransferRecord[]): Plc {
  return { ...plc, transferChain };
}

interface InvalidChainVector {
  readonly name: string;
  readonly description: string;
  readonly plc: PlcJson;
  readonly expected: { readonly reason: RejectionReason; readonly index: number | null };
}

function buildInvalidChains(keys: Record<Name, KeyPair>, plc: Plc): InvalidChainVector[] {
  const json = plcToJson(plc);
  const [r0, r1] = plc.transferChain as [TransferRecord, TransferRecord, TransferRecord];
  const commitmentHash = computeCommitmentHash(plc.commitment);
  const hash0 = computeRecordHash(r0);
  const at = (hours: number): number => vectorCreatedAtMs + hours * hourMs;
  // A re-signed second record: bob signs different content after the genuine first record.
  const bobSigns = (content: Partial<Parameters<typeof signTransferRecord>[0]>, secretKey = keys.bob.secretKey): TransferRecord =>
    signTransferRecord(
      { recipientPublicKey: keys.carol.publicKey, timestampMs: at(2), nonce: vectorBytes('nonce:invalid', 16), prevHash: hash0, ...content },
      secretKey,
    );
  // A PLC with a commitment that the issuer signed honestly but that breaks a commitment rule.
  const reissued = (expiresAtMs: number): PlcJson => {
    const base = issueVectorPlc(keys);
    const commitment = { ...base.commitment, expiresAtMs };
    // Build the bytes by hand: encodeCommitment refuses an invalid TTL, as a builder should.
    const bytes = new Uint8Array(encodeCommitment(base.commitment));
    new DataView(bytes.buffer).setBigUint64(94, BigInt(expiresAtMs), false);
    const hash = sha256(bytes);
    return plcToJson({ commitment, commitmentHash: hash, issuerSignature: sign(hash, keys.alice.secretKey), transferChain: [] });
  };
  // The identity point: a canonical encoding of a small-order point.
  const smallOrderKey = `01${'00'.repeat(31)}`;
  // A point of order 8 (smallOrderPointEncodings[4]) added to a valid key: a key of mixed order.
  const withTorsion = (publicKey: Uint8Array): Uint8Array =>
    ed.Point.fromBytes(publicKey, false).add(ed.Point.fromBytes(hexToBytes(smallOrderPointEncodings[4]!, 32), false)).toBytes();

  const vectors: InvalidChainVector[] = [
    {
      name: 'ttl_too_long',
      description: 'expires_at is 168 hours and 1 millisecond after created_at; signed honestly by the issuer',
      plc: reissued(vectorCreatedAtMs + ttlMsMax + 1),
      expected: { reason: 'invalid_ttl', index: null },
    },
    {
      name: 'ttl_too_short',
      description: 'expires_at is 59 minutes after created_at; signed honestly by the issuer',
      plc: reissued(vectorCreatedAtMs + ttlMsMin - 60_000),
      expected: { reason: 'invalid_ttl', index: null },
    },
    {
      name: 'issuer_key_small_order',
      description: 'issuer_pubkey is the identity point (small order)',
      plc: mutateJson(json, (c) => {
        c.issuer_pubkey = smallOrderKey;
      }),
      expected: { reason: 'invalid_public_key', index: null },
    },
    {
      name: 'issuer_key_torsion',
      description: "issuer_pubkey is alice's key plus a point of order 8 (a key with a torsion component)",
      plc: mutateJson(json, (c) => {
        c.issuer_pubkey = bytesToHex(withTorsion(keys.alice.publicKey));
      }),
      expected: { reason: 'invalid_public_key', index: null },
    },
    {
      name: 'amount_changed',
      description: 'amount changed from 12.34 to 99.99 after signing (commitment hash left as signed)',
      plc: mutateJson(json, (c) => {
        c.amount = '99.99';
      }),
      expected: { reason: 'commitment_hash_mismatch', index: null },
    },
    {
      name: 'expiry_changed_and_rehashed',
      description: 'expires_at moved one hour later and commitment_hash recomputed; the issuer signature no longer matches',
      plc: (() => {
        const commitment = { ...plc.commitment, expiresAtMs: plc.commitment.expiresAtMs + hourMs };
        return plcToJson({ ...plc, commitment, commitmentHash: computeCommitmentHash(commitment), transferChain: [] });
      })(),
      expected: { reason: 'invalid_issuer_signature', index: null },
    },
    {
      name: 'broken_link',
      description: 'the second record links to the commitment hash instead of the first record (signed by bob)',
      plc: plcToJson(withChain(plc, [r0, bobSigns({ prevHash: commitmentHash })])),
      expected: { reason: 'broken_link', index: 1 },
    },
    {
      name: 'wrong_sender',
      description: 'the second record is signed by dave, who is not the bearer (bob is)',
      plc: plcToJson(withChain(plc, [r0, bobSigns({}, keys.dave.secretKey)])),
      expected: { reason: 'wrong_sender', index: 1 },
    },
    {
      name: 'recipient_small_order',
      description: 'bob transfers to the identity point',
      plc: plcToJson(withChain(plc, [r0, bobSigns({ recipientPublicKey: Uint8Array.of(1, ...new Uint8Array(31)) })])),
      expected: { reason: 'invalid_public_key', index: 1 },
    },
    {
      name: 'recipient_torsion',
      description: "bob transfers to carol's key plus a point of order 8 (a key with a torsion component)",
      plc: plcToJson(withChain(plc, [r0, bobSigns({ recipientPublicKey: withTorsion(keys.carol.publicKey) })])),
      expected: { reason: 'invalid_public_key', index: 1 },
    },
    {
      name: 'self_transfer',
      description: 'bob transfers to himself',
      plc: plcToJson(withChain(plc, [r0, bobSigns({ recipientPublicKey: keys.bob.publicKey })])),
      expected: { reason: 'self_transfer', index: 1 },
    },
    {
      name: 'timestamp_after_expiry',
      description: 'the second record is timestamped 5 minutes and 1 millisecond after expires_at',
      plc: plcToJson(withChain(plc, [r0, bobSigns({ timestampMs: plc.commitment.expiresAtMs + clockToleranceMsDefault + 1 })])),
      expected: { reason: 'timestamp_out_of_range', index: 1 },
    },
    {
      name: 'timestamp_before_creation',
      description: 'the first record is timestamped 5 minutes and 1 millisecond before created_at',
      plc: plcToJson(
        withChain(plc, [
          signTransferRecord(
            { recipientPublicKey: keys.bob.publicKey, timestampMs: vectorCreatedAtMs - clockToleranceMsDefault - 1, nonce: r0.nonce, prevHash: commitmentHash },
            keys.alice.secretKey,
          ),
        ]),
      ),
      expected: { reason: 'timestamp_out_of_range', index: 0 },
    },
    {
      name: 'timestamp_decreasing',
      description: 'the second record is timestamped one millisecond before the first',
      plc: plcToJson(withChain(plc, [r0, bobSigns({ timestampMs: r0.timestampMs - 1 })])),
      expected: { reason: 'timestamp_decreasing', index: 1 },
    },
    {
      name: 'duplicate_nonce',
      description: 'the second record reuses the first record nonce',
      plc: plcToJson(withChain(plc, [r0, bobSigns({ nonce: r0.nonce })])),
      expected: { reason: 'duplicate_nonce', index: 1 },
    },
    {
      name: 'record_hash_changed',
      description: 'the carried hash of the first record is altered (its last byte flipped)',
      plc: mutateJson(json, (c) => {
        const record = c.transfer_chain[0]!;
        record.hash = record.hash.slice(0, 62) + (record.hash.endsWith('00') ? '01' : '00');
      }),
      expected: { reason: 'record_hash_mismatch', index: 0 },
    },
    {
      name: 'recipient_swapped',
      description: 'the second record recipient replaced with dave, hashes recomputed, signature left as bob made it for carol',
      plc: (() => {
        const forged = { ...r1, recipientPublicKey: keys.dave.publicKey };
        const rehashed = { ...forged, hash: computeRecordHash(forged) };
        return plcToJson(withChain(plc, [r0, rehashed]));
      })(),
      expected: { reason: 'invalid_signature', index: 1 },
    },
  ];
  return vectors;
}

function recordClockCases(plc: Plc) {
  const [r0, r1, r2] = plc.transferChain as [TransferRecord, TransferRecord, TransferRecord];
  const cases = [
    { description: 'every record in the past (the last one a minute ago)', now_ms: r2.timestampMs + 60_000 },
    { description: 'the last record exactly the tolerance ahead: accepted', now_ms: r2.timestampMs - clockToleranceMsDefault },
    { description: 'the last record 1 ms past the tolerance', now_ms: r2.timestampMs - clockToleranceMsDefault - 1 },
    { description: 'the second record 1 ms past the tolerance', now_ms: r1.timestampMs - clockToleranceMsDefault - 1 },
    { description: 'the whole chain 24 hours ahead', now_ms: r0.timestampMs - 24 * hourMs },
  ];
  return cases.map((c) => {
    const check = checkRecordClock(plc.transferChain, c.now_ms);
    return { ...c, expected: check.ok ? { ok: true } : { ok: false, reason: check.reason, index: check.index } };
  });
}

export async function buildProtocolVectors() {
  const keys = keysByName();
  const plc = buildVectorPlc(keys);
  const commitmentBytes = encodeCommitment(plc.commitment);
  const commitmentHash = computeCommitmentHash(plc.commitment);
  const transportBytes = encodeTransport(plc);
  const headHash = computeRecordHash(plc.transferChain.at(-1)!);

  const sealedNonce = vectorBytes('nonce:sealed', 24);
  const sealedMaterial = deriveSealedKeyMaterial(keys.alice.secretKey, keys.bob.publicKey, keys.alice.publicKey, keys.bob.publicKey);
  const sealed = sealPayload({ senderSecretKey: keys.alice.secretKey, recipientPublicKey: keys.bob.publicKey, plaintext: transportBytes, nonce: sealedNonce });

  const freshPlc = { ...plc, transferChain: [] };
  const cancelRequest = { tokenId: vectorTokenId, commitmentHash, timestampMs: vectorCreatedAtMs + 30 * 60_000 };
  const cancel = signCancel(cancelRequest, keys.alice.secretKey);
  const redeemRequest = {
    tokenId: vectorTokenId,
    headHash,
    settlementRail: 'pix' as const,
    destination: 'alice@example.com',
    timestampMs: vectorCreatedAtMs + 4 * hourMs,
  };
  const redeem = signRedeem(redeemRequest, keys.alice.secretKey);
  const keyOperation = { deviceId: 'device-alice-01', operationTimestampMs: vectorCreatedAtMs };
  const backup = signKeyOperation('backup', keyOperation, keys.alice.secretKey);
  const recover = signKeyOperation('recover', keyOperation, keys.alice.secretKey);

  const forkBase = { ...plc, transferChain: plc.transferChain.slice(0, 1) };
  const forkA = appendTransfer(forkBase, {
    senderSecretKey: keys.bob.secretKey,
    recipientPublicKey: keys.carol.publicKey,
    timestampMs: vectorCreatedAtMs + 2 * hourMs,
    nonce: vectorBytes('nonce:fork:a', 16),
  });
  const forkB = appendTransfer(forkBase, {
    senderSecretKey: keys.bob.secretKey,
    recipientPublicKey: keys.dave.publicKey,
    timestampMs: vectorCreatedAtMs + 2 * hourMs + 60_000,
    nonce: vectorBytes('nonce:fork:b', 16),
  });

  const invalidChains = buildInvalidChains(keys, plc);
  const ed25519Cases = await craftedCasesWithVerdicts(keys.alice.secretKey);

  return {
    description:
      'Offline protocol 2.0 test vectors (docs/protocol.md). Throwaway keys: each seed is SHA-256 of "svc:plc:test-vector:key:<name>". Byte strings are lowercase hex; amounts in minor units and instants in ms are JSON integers.',
    derivation: {
      vector_bytes:
        'vector_bytes(label, n) = the first n bytes of SHA-256(ASCII("svc:plc:test-vector:" | label)). Every fixed value below that is not a field of the protocol is one: key seeds (label "key:<name>", 32 bytes) and nonces (their "nonce_label", 16 bytes; the sealed nonce 24 bytes).',
      signatures: 'Ed25519 signing (RFC 8032) is deterministic: signing the documented message with the documented seed gives the documented signature.',
      timestamps: 'created_at is 2026-11-22T10:00:00.000Z (1795341600000); transfer i is timestamped created_at + (i + 1) hours.',
      invalid_chains:
        'a record re-signed for an invalid chain is signed by bob after plc.transfers[0], to carol, at created_at + 2 hours, with nonce_label "nonce:invalid", unless its description says what differs; every field is in its JSON.',
      ed25519_cases:
        'alice\'s secret scalar a is the RFC 8032 clamped scalar of her seed; k = SHA-512(R | A | M) mod L over the bytes as written; where a case names a nonce label, r = (SHA-512(ASCII("svc:plc:test-vector:ed25519-case:" | label)) read as a little-endian integer, mod (L - 1)) + 1.',
    },
    generator: 'scripts/gen-protocol-vectors.ts',
    protocol_version: '2.0',
    constants: {
      domain_tags: Object.fromEntries(
        Object.entries(domainTags).map(([name, bytes]) => [
          name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`),
          // The NUL byte that ends a structural tag is written as JSON's "\u0000", the byte itself.
          { ascii: new TextDecoder().decode(bytes), hex: bytesToHex(bytes) },
        ]),
      ),
      chain_length_max: chainLengthMax,
      clock_tolerance_ms_default: clockToleranceMsDefault,
      ttl_ms_min: ttlMsMin,
      ttl_ms_max: ttlMsMax,
      amount_minor_max: Number(amountMinorMax),
      currency_decimals: currencyDecimals,
      transport_text_prefix: transportTextPrefix,
      transport_hops_max: transportHopsMax,
      qr_alphanumeric_chars_max: qrAlphanumericCharsMax,
    },
    keys: Object.fromEntries(
      vectorNames.map((name) => [
        name,
        {
          seed: bytesToHex(keys[name].secretKey),
          public_key: bytesToHex(keys[name].publicKey),
          x25519_public_key: bytesToHex(ed25519.utils.toMontgomery(keys[name].publicKey)),
        },
      ]),
    ) as Record<Name, { seed: string; public_key: string; x25519_public_key: string }>,
    plc: {
      commitment: {
        version: plc.commitment.version,
        token_id: plc.commitment.tokenId,
        issuer: 'alice',
        issuer_pubkey: bytesToHex(plc.commitment.issuerPublicKey),
        amount_minor: Number(plc.commitment.amountMinor),
        currency: plc.commitment.currency,
        decimals: 2,
        created_at_ms: plc.commitment.createdAtMs,
        expires_at_ms: plc.commitment.expiresAtMs,
        nonce: bytesToHex(plc.commitment.nonce),
        nonce_label: 'nonce:commitment',
        canonical_bytes: bytesToHex(commitmentBytes),
        commitment_hash: bytesToHex(commitmentHash),
        issuer_signature: bytesToHex(plc.issuerSignature),
      },
      transfers: plc.transferChain.map((record, index) => ({
        index,
        sender: vectorNames.find((name) => bytesToHex(keys[name].publicKey) === bytesToHex(record.senderPublicKey)),
        recipient: vectorNames.find((name) => bytesToHex(keys[name].publicKey) === bytesToHex(record.recipientPublicKey)),
        sender_pubkey: bytesToHex(record.senderPublicKey),
        recipient_pubkey: bytesToHex(record.recipientPublicKey),
        timestamp_ms: record.timestampMs,
        nonce: bytesToHex(record.nonce),
        nonce_label: `nonce:transfer:${index}`,
        prev_hash: bytesToHex(record.prevHash),
        signed_message: bytesToHex(encodeTransferMessage(record)),
        signature: bytesToHex(record.signature),
        hash_input: bytesToHex(encodeRecordHashInput(record)),
        hash: bytesToHex(record.hash),
      })),
      head_hash: bytesToHex(headHash),
      bearer: 'alice',
      json: plcToJson(plc),
      transport: {
        cbor: bytesToHex(transportBytes),
        text: encodeTransportText(plc),
        fresh_cbor: bytesToHex(encodeTransport(freshPlc)),
        fresh_text: transportTextPrefix + base45Encode(encodeTransport(freshPlc)),
      },
    },
    sealed: {
      sender: 'alice',
      recipient: 'bob',
      plaintext: bytesToHex(transportBytes),
      plaintext_is: 'plc.transport.cbor',
      sender_x25519_secret: bytesToHex(ed25519.utils.toMontgomerySecret(keys.alice.secretKey)),
      shared_secret: bytesToHex(sealedMaterial.sharedSecret),
      kdf_salt: bytesToHex(domainTags.sealedKdfSalt),
      kdf_info: bytesToHex(keys.alice.publicKey) + bytesToHex(keys.bob.publicKey),
      key: bytesToHex(sealedMaterial.key),
      aad: bytesToHex(sealedMaterial.aad),
      nonce: bytesToHex(sealedNonce),
      nonce_label: 'nonce:sealed',
      sealed: bytesToHex(sealed),
    },
    auth_messages: {
      cancel: {
        signer: 'alice',
        token_id: cancel.tokenId,
        commitment_hash: bytesToHex(cancel.commitmentHash),
        timestamp_ms: cancel.timestampMs,
        message: bytesToHex(encodeCancelMessage(cancelRequest)),
        signature: bytesToHex(cancel.signature),
      },
      redeem: {
        signer: 'alice',
        token_id: redeem.tokenId,
        head_hash: bytesToHex(redeem.headHash),
        settlement_rail: redeem.settlementRail,
        destination: redeem.destination,
        timestamp_ms: redeem.timestampMs,
        message: bytesToHex(encodeRedeemMessage(redeemRequest)),
        signature: bytesToHex(redeem.signature),
      },
      backup: {
        signer: 'alice',
        device_id: backup.deviceId,
        public_key: bytesToHex(backup.publicKey),
        operation_timestamp: backup.operationTimestampMs,
        message: keyOperationMessage('backup', backup),
        message_hex: hexOf(keyOperationMessage('backup', backup)),
        signature: bytesToHex(backup.signature),
      },
      recover: {
        signer: 'alice',
        device_id: recover.deviceId,
        public_key: bytesToHex(recover.publicKey),
        operation_timestamp: recover.operationTimestampMs,
        message: keyOperationMessage('recover', recover),
        message_hex: hexOf(keyOperationMessage('recover', recover)),
        signature: bytesToHex(recover.signature),
      },
    },
    fork: {
      description:
        'alice -> bob (plc.transfers[0]), then bob signs two different records after the same previous hash: to carol at created_at + 2 h (nonce_label "nonce:fork:a") and to dave at created_at + 2 h 1 min (nonce_label "nonce:fork:b")',
      first: plcToJson(forkA),
      second: plcToJson(forkB),
      expected: { index: 1, culprit: 'bob', culprit_pubkey: bytesToHex(keys.bob.publicKey) },
    },
    invalid_chains: invalidChains,
    record_clock: {
      description:
        'Records against the receiving clock (docs/protocol.md section 7.4): the chain of plc.json checked at several server clocks with the default tolerance; a record later than now + tolerance is refused with timestamp_in_future at its index.',
      plc_is: 'plc.json',
      clock_tolerance_ms: clockToleranceMsDefault,
      cases: recordClockCases(plc),
    },
    ed25519_cases: {
      description:
        'Crafted Ed25519 cases (docs/protocol.md section 2): each of the eight small-order points as A and as R, keys with each torsion component, non-canonical A, R and S, S = L, S >= 2^253, and the honest control. "expected" is the protocol rule; "verdicts" are what each verifier answered when the file was generated. A conforming wallet accepts exactly the cases whose "expected" is "accept".',
      message: bytesToHex(craftedCaseMessage),
      message_ascii: new TextDecoder().decode(craftedCaseMessage),
      verifiers: {
        service: 'the protocol library, src/protocol/keys.ts verifySignature (what the wallet program runs)',
        service_node: "the server's verifier over node:crypto, infra/ed25519-node.ts",
        openssl: 'node:crypto verify alone (OpenSSL), with no check of ours',
        noble_strict: '@noble/ed25519 verify(signature, message, key, { zip215: false })',
        noble_zip215: '@noble/ed25519 verify(signature, message, key), its default ZIP-215 rules',
        libsodium: 'libsodium crypto_sign_verify_detached (the libsodium-wrappers package)',
      } satisfies Record<VerifierName, string>,
      cases: ed25519Cases,
    },
  };
}

/** Fails loudly, before anything is written, when a vector does not behave as documented. */
export function selfCheckVectors(vectors: Awaited<ReturnType<typeof buildProtocolVectors>>): void {
  const verification = verifyPlc(parsePlcJson(vectors.plc.json));
  if (!verification.ok) throw new Error(`vector PLC does not verify: ${verification.reason}`);
  for (const vector of vectors.invalid_chains) {
    const result = verifyPlc(parsePlcJson(vector.plc));
    if (result.ok || result.reason !== vector.expected.reason || result.index !== vector.expected.index) {
      throw new Error(`invalid chain vector ${vector.name} gives ${JSON.stringify(result.ok ? 'ok' : [result.reason, result.index])}`);
    }
  }
  const fork = detectFork(parsePlcJson(vectors.fork.first), parsePlcJson(vectors.fork.second));
  if (fork.kind !== 'fork' || fork.index !== vectors.fork.expected.index) throw new Error('fork vector is not detected as documented');
  for (const crafted of vectors.ed25519_cases.cases) {
    if (crafted.verdicts.service !== crafted.expected || crafted.verdicts.service_node !== crafted.expected) {
      throw new Error(`crafted Ed25519 case ${crafted.name}: the service answers ${crafted.verdicts.service}, the rule ${crafted.expected}`);
    }
    if (crafted.expected === 'accept' && Object.values(crafted.verdicts).some((verdict) => verdict !== 'accept')) {
      throw new Error(`crafted Ed25519 case ${crafted.name} is accepted by the service but refused by ${JSON.stringify(crafted.verdicts)}`);
    }
  }
}

if (import.meta.main) {
  const vectors = await buildProtocolVectors();
  selfCheckVectors(vectors);
  writeFileSync(vectorsPath, `${JSON.stringify(vectors, null, 2)}\n`);
  console.log(`wrote ${vectorsPath.pathname}`);
}
