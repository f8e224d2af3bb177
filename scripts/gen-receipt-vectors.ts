/**
 * Writes test/src/protocol/vectors/receipt-v1.json: the issue receipt's test vectors
 * (docs/protocol.md section 19), from fixed seeds like the protocol's own vectors (section 14), so
 * every run gives the same bytes.
 *
 *   npx node scripts/gen-receipt-vectors.ts
 *
 * test/src/protocol/receipt.test.ts rebuilds them in memory and compares them with the committed
 * file, then checks each one against the library and against the layout written out by hand.
 */
import { writeFileSync } from 'node:fs';
import {
  blocklistDomainTagV2,
  blocklistFormatV2,
  blocklistToJson,
  bytesToHex,
  canonicalReceiptKeyOrder,
  computeCommitmentHash,
  createPlc,
  domainTags,
  encodeBlocklist,
  encodeIssueReceipt,
  encodeIssueReceiptMessage,
  encodeTransport,
  encodeTransportText,
  issueReceiptBytes,
  issueReceiptFormat,
  issueReceiptMessageBytes,
  plcToJson,
  sign,
  signBlocklist,
  signIssueReceipt,
  timestampMsMax,
  verifyBlocklistJson,
  verifyIssueReceipt,
  withIssueReceipt,
  type Blocklist,
  type ReceiptKey,
  type ReceiptRejectionReason,
} from '../src/protocol/index.ts';
import { buildVectorPlc, vectorBytes, vectorCreatedAtMs, vectorKey } from './gen-protocol-vectors.ts';

export const receiptVectorsPath = new URL('../test/src/protocol/vectors/receipt-v1.json', import.meta.url);

/** The old receipt key's period ends, and the new one's starts, one second after the vector PLC's created_at. */
export const rotationAtMs = vectorCreatedAtMs + 1_000;
const oldKeyFromMs = Date.UTC(2026, 10, 1, 0, 0, 0, 0);

type Expected = { ok: true } | { ok: false; reason: ReceiptRejectionReason };

export function buildReceiptVectors() {
  const root = vectorKey('blocklist-service');
  const oldKey = vectorKey('receipt-service-old');
  const newKey = vectorKey('receipt-service-new');
  const dave = vectorKey('dave');
  const plc = buildVectorPlc();
  const commitment = plc.commitment;
  const other = createPlc({
    issuerSecretKey: vectorKey('alice').secretKey,
    amountMinor: 1234n,
    currency: 'BRL',
    createdAtMs: vectorCreatedAtMs,
    ttlHours: 24,
    tokenId: '9b2d6f4a-1c3e-4a5b-8d7f-6e5d4c3b2a19',
    nonce: vectorBytes('nonce:receipt:other', 16),
  });

  // The trust lists, as the signed blocklist v2 carries them: during the rotation both keys, the
  // old one only for receipts issued up to the rotation; after its revocation the new one alone.
  const oldEntry: ReceiptKey = { publicKey: oldKey.publicKey, validFromMs: oldKeyFromMs, validUntilMs: rotationAtMs };
  const newEntry: ReceiptKey = { publicKey: newKey.publicKey, validFromMs: rotationAtMs, validUntilMs: timestampMsMax };
  const listPublishedAtMs = vectorCreatedAtMs + 30 * 60_000;
  const blocklists: Record<'rotation' | 'after_revocation', Blocklist> = {
    rotation: { version: 6, publishedAtMs: listPublishedAtMs, keys: [], receiptKeys: canonicalReceiptKeyOrder([oldEntry, newEntry]) },
    after_revocation: { version: 7, publishedAtMs: listPublishedAtMs + 60_000, keys: [], receiptKeys: [newEntry] },
  };
  const trust = { rotation: blocklists.rotation.receiptKeys!, after_revocation: blocklists.after_revocation.receiptKeys! };

  const byOld = signIssueReceipt({ commitment, serviceSecretKey: oldKey.secretKey, issuedAtMs: vectorCreatedAtMs + 500 });
  const byNew = signIssueReceipt({ commitment, serviceSecretKey: newKey.secretKey, issuedAtMs: vectorCreatedAtMs + 1_500 });
  const oldTooLate = signIssueReceipt({ commitment, serviceSecretKey: oldKey.secretKey, issuedAtMs: vectorCreatedAtMs + 1_500 });
  const byDave = signIssueReceipt({ commitment, serviceSecretKey: dave.secretKey, issuedAtMs: vectorCreatedAtMs + 1_500 });
  // Names the new (trusted) key, signed by dave's.
  const daveAsNew = encodeIssueReceipt({
    servicePublicKey: newKey.publicKey,
    commitmentHash: computeCommitmentHash(commitment),
    issuedAtMs: vectorCreatedAtMs + 1_500,
    signature: sign(encodeIssueReceiptMessage(commitment, newKey.publicKey, vectorCreatedAtMs + 1_500), dave.secretKey),
  });
  const ofOther = signIssueReceipt({ commitment: other.commitment, serviceSecretKey: newKey.secretKey, issuedAtMs: vectorCreatedAtMs + 1_500 });
  const issuedAtChanged = byNew.slice();
  issuedAtChanged[72] = (issuedAtChanged[72] as number) ^ 0x01;

  const cases: { name: string; receipt: string | null; trust: keyof typeof trust; expected: Expected }[] = [
    { name: 'valid', receipt: bytesToHex(byNew), trust: 'rotation', expected: { ok: true } },
    { name: 'valid_after_revocation_of_the_old_key', receipt: bytesToHex(byNew), trust: 'after_revocation', expected: { ok: true } },
    { name: 'rotated_old_key_within_its_validity', receipt: bytesToHex(byOld), trust: 'rotation', expected: { ok: true } },
    { name: 'rotated_old_key_after_revocation', receipt: bytesToHex(byOld), trust: 'after_revocation', expected: { ok: false, reason: 'untrusted_key' } },
    { name: 'rotated_old_key_issued_after_its_validity', receipt: bytesToHex(oldTooLate), trust: 'rotation', expected: { ok: false, reason: 'key_not_valid_at_time' } },
    { name: 'wrong_key', receipt: bytesToHex(daveAsNew), trust: 'rotation', expected: { ok: false, reason: 'wrong_key' } },
    { name: 'issued_at_changed', receipt: bytesToHex(issuedAtChanged), trust: 'rotation', expected: { ok: false, reason: 'wrong_key' } },
    { name: 'untrusted_key', receipt: bytesToHex(byDave), trust: 'rotation', expected: { ok: false, reason: 'untrusted_key' } },
    { name: 'wrong_commitment', receipt: bytesToHex(ofOther), trust: 'rotation', expected: { ok: false, reason: 'wrong_commitment' } },
    { name: 'truncated', receipt: bytesToHex(byNew.slice(0, issueReceiptBytes - 1)), trust: 'rotation', expected: { ok: false, reason: 'truncated' } },
    { name: 'truncated_to_the_header', receipt: bytesToHex(byNew.slice(0, 33)), trust: 'rotation', expected: { ok: false, reason: 'truncated' } },
    { name: 'unknown_format', receipt: `02${bytesToHex(byNew.slice(1))}`, trust: 'rotation', expected: { ok: false, reason: 'malformed' } },
    { name: 'trailing_byte', receipt: `${bytesToHex(byNew)}00`, trust: 'rotation', expected: { ok: false, reason: 'malformed' } },
    { name: 'missing', receipt: null, trust: 'rotation', expected: { ok: false, reason: 'missing' } },
  ];
  for (const vector of cases) {
    const result = verifyIssueReceipt(commitment, vector.receipt === null ? undefined : Uint8Array.from(Buffer.from(vector.receipt, 'hex')), trust[vector.trust]);
    const got = result.ok ? { ok: true } : { ok: false, reason: result.reason };
    if (JSON.stringify(got) !== JSON.stringify(vector.expected)) throw new Error(`receipt vector ${vector.name}: got ${JSON.stringify(got)}`);
  }

  const carried = withIssueReceipt(plc, byNew);
  const fresh = withIssueReceipt({ ...plc, transferChain: [] }, byNew);
  return {
    description:
      "Issue receipt test vectors, receipt format 0x01 (docs/protocol.md section 19), and the signed blocklist v2 that carries the receipt keys (section 19.4).",
    derivation: {
      keys: 'seeds SHA-256(ASCII("svc:plc:test-vector:key:<name>")) as in protocol-v2.json (section 14): receipt-service-old, receipt-service-new, dave; the lists are signed by blocklist-service (blocklist-v1.json)',
      plc: 'the PLC of protocol-v2.json (alice issues 12.34 BRL; alice -> bob -> carol -> alice)',
      other_plc: 'the same amount and issuer under token id 9b2d6f4a-1c3e-4a5b-8d7f-6e5d4c3b2a19 with nonce SHA-256(ASCII("svc:plc:test-vector:nonce:receipt:other"))[0..16]',
    },
    constants: {
      domain_tag: { ascii: 'svc:plc:receipt:v1\0', hex: bytesToHex(domainTags.receipt) },
      format: issueReceiptFormat,
      receipt_bytes: issueReceiptBytes,
      message_bytes: issueReceiptMessageBytes,
      blocklist_format: blocklistFormatV2,
      blocklist_domain_tag: { ascii: `${blocklistFormatV2}\0`, hex: bytesToHex(blocklistDomainTagV2) },
    },
    keys: {
      blocklist_service: bytesToHex(root.publicKey),
      receipt_old: { seed: bytesToHex(oldKey.secretKey), public_key: bytesToHex(oldKey.publicKey) },
      receipt_new: { seed: bytesToHex(newKey.secretKey), public_key: bytesToHex(newKey.publicKey) },
      dave: bytesToHex(dave.publicKey),
    },
    rotation_at_ms: rotationAtMs,
    blocklists: Object.fromEntries(
      Object.entries(blocklists).map(([name, list]) => [name, { canonical_bytes: bytesToHex(encodeBlocklist(list)), json: blocklistToJson(signBlocklist(list, root.secretKey)) }]),
    ),
    commitment: {
      token_id: commitment.tokenId,
      commitment_hash: bytesToHex(computeCommitmentHash(commitment)),
      other_commitment_hash: bytesToHex(computeCommitmentHash(other.commitment)),
    },
    valid: {
      issued_at_ms: vectorCreatedAtMs + 1_500,
      message: bytesToHex(encodeIssueReceiptMessage(commitment, newKey.publicKey, vectorCreatedAtMs + 1_500)),
      receipt: bytesToHex(byNew),
    },
    cases,
    forms: {
      json: plcToJson(carried),
      cbor: bytesToHex(encodeTransport(carried)),
      cbor_without_receipt: bytesToHex(encodeTransport(plc)),
      text: encodeTransportText(carried),
      fresh_text: encodeTransportText(fresh),
    },
  };
}

/** Checks that every list verifies against the blocklist key; used by the generator before writing. */
export function selfCheckReceiptVectors(vectors: ReturnType<typeof buildReceiptVectors>): void {
  const root = Uint8Array.from(Buffer.from(vectors.keys.blocklist_service, 'hex'));
  for (const [name, list] of Object.entries(vectors.blocklists)) {
    const verified = verifyBlocklistJson(list.json, root);
    if (!verified.ok) throw new Error(`blocklist ${name} does not verify: ${verified.message}`);
  }
}

if (import.meta.main) {
  const vectors = buildReceiptVectors();
  selfCheckReceiptVectors(vectors);
  writeFileSync(receiptVectorsPath, `${JSON.stringify(vectors, null, 2)}\n`);
  console.log(`wrote ${receiptVectorsPath.pathname}`);
}
