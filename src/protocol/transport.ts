/**
 * The compact transport form: deterministic CBOR (RFC 8949 section 4.2) for NFC/BLE, and the same
 * bytes as base45 text behind "PLC2:" for a QR code.
 *
 * Everything that can be recomputed is left out: the commitment hash, each record's sender (the
 * issuer, then the previous recipient), previous hash and own hash. The decoder re-derives them,
 * which also means a transport-decoded chain is always linked; its signatures, timestamps and
 * nonces are still checked only by `verifyPlc`, never implicitly here.
 *
 *   PLC map (10 entries, unsigned integer keys)    record map (4 entries)
 *    1 version          text "2.0"                  1 recipient key  bytes(32)
 *    2 token id         bytes(16)                   2 timestamp ms   uint
 *    3 issuer key       bytes(32)                   3 nonce          bytes(16)
 *    4 amount minor     uint, 1..10^15              4 signature      bytes(64)
 *    5 currency         text, 3 upper-case letters
 *    6 created_at ms    uint
 *    7 expires_at ms    uint
 *    8 nonce            bytes(16)
 *    9 issuer signature bytes(64)
 *   10 transfer chain   array of record maps, 0..32 (0..20 in the text form)
 *   11 issue receipt    bytes(1..256), optional: the service's receipt (receipt.ts), carried
 *                       opaque; a PLC without one is the 10-entry map of protocol 2.0 as first
 *                       published, byte for byte
 */
import { decode, encode, rfc8949EncodeOptions, type DecodeOptions } from 'cborg';
import {
  chainLengthMax,
  hashBytes,
  nonceBytes,
  protocolVersion,
  publicKeyBytes,
  qrAlphanumericCharsMax,
  signatureBytes,
  tokenIdBytes,
  transportBytesMax,
  transportHopsMax,
  transportHopsMaxWithReceipt,
  transportTextPrefix,
} from './constants.ts';
import { bytesEqual, bytesToUuid, isBytes, isTimestampMs, uuidToBytes } from './bytes.ts';
import { base45Decode, base45Encode } from './base45.ts';
import { checkCommitmentFields, computeCommitmentHash } from './commitment.ts';
import { ProtocolError } from './errors.ts';
import { computeRecordHash, isRecordWellFormed } from './transfer.ts';
import { issueReceiptCarriedBytesMax } from './receipt.ts';
import type { Plc, PlcCommitment, TransferRecord } from './types.ts';

const plcKey = {
  version: 1,
  tokenId: 2,
  issuerPublicKey: 3,
  amountMinor: 4,
  currency: 5,
  createdAtMs: 6,
  expiresAtMs: 7,
  nonce: 8,
  issuerSignature: 9,
  transferChain: 10,
  issueReceipt: 11,
} as const;

const recordKey = { recipientPublicKey: 1, timestampMs: 2, nonce: 3, signature: 4 } as const;

const decodeOptions: DecodeOptions = {
  useMaps: true,
  rejectDuplicateMapKeys: true,
  strict: true,
  allowIndefinite: false,
  allowUndefined: false,
  allowInfinity: false,
  allowNaN: false,
  // Every integer of the protocol is below 2^53; a larger one is an error, not a bigint.
  allowBigInt: false,
  // No tag decoders: any CBOR tag is refused.
  tags: [],
};

function invalid(message: string): ProtocolError {
  return new ProtocolError('invalid_transport', message);
}

/**
 * The CBOR bytes of a PLC. Refuses (invalid_argument) a PLC whose omitted fields could not be
 * re-derived: a record whose sender is not the previous bearer or whose previous hash is not the
 * previous record's, because dropping them would silently change what the receiver sees.
 */
export function encodeTransport(plc: Plc): Uint8Array {
  const check = checkCommitmentFields(plc.commitment);
  if (!check.ok) throw new ProtocolError('invalid_argument', check.detail, { reason: check.reason });
  if (plc.transferChain.length > chainLengthMax) {
    throw new ProtocolError('invalid_argument', `a chain holds at most ${chainLengthMax} records`);
  }
  if (!isBytes(plc.issuerSignature, signatureBytes)) throw new ProtocolError('invalid_argument', 'issuer signature is 64 bytes');
  let expectedPrevHash = computeCommitmentHash(plc.commitment);
  let expectedSender = plc.commitment.issuerPublicKey;
  const records: Map<number, unknown>[] = [];
  for (const [index, record] of plc.transferChain.entries()) {
    if (!isRecordWellFormed(record)) throw new ProtocolError('invalid_argument', `record ${index} is malformed`);
    if (!bytesEqual(record.prevHash, expectedPrevHash) || !bytesEqual(record.senderPublicKey, expectedSender)) {
      throw new ProtocolError('invalid_argument', `record ${index} is not linked to its predecessor; the transport form cannot carry it`);
    }
    records.push(
      new Map<number, unknown>([
        [recordKey.recipientPublicKey, record.recipientPublicKey],
        [recordKey.timestampMs, record.timestampMs],
        [recordKey.nonce, record.nonce],
        [recordKey.signature, record.signature],
      ]),
    );
    expectedPrevHash = computeRecordHash(record);
    expectedSender = record.recipientPublicKey;
  }
  const c = plc.commitment;
  const map = new Map<number, unknown>([
    [plcKey.version, c.version],
    [plcKey.tokenId, uuidToBytes(c.tokenId)],
    [plcKey.issuerPublicKey, c.issuerPublicKey],
    // Safe: amounts are at most 10^15 < 2^53, so the number is exact and CBOR writes a uint.
    [plcKey.amountMinor, Number(c.amountMinor)],
    [plcKey.currency, c.currency],
    [plcKey.createdAtMs, c.createdAtMs],
    [plcKey.expiresAtMs, c.expiresAtMs],
    [plcKey.nonce, c.nonce],
    [plcKey.issuerSignature, plc.issuerSignature],
    [plcKey.transferChain, records],
  ]);
  if (plc.issueReceipt !== undefined) {
    const receipt = plc.issueReceipt;
    if (!(receipt instanceof Uint8Array) || receipt.length < 1 || receipt.length > issueReceiptCarriedBytesMax) {
      throw new ProtocolError('invalid_argument', `an issue receipt is 1 to ${issueReceiptCarriedBytesMax} bytes`);
    }
    map.set(plcKey.issueReceipt, receipt);
  }
  return encode(map, rfc8949EncodeOptions);
}

/** A map of keys 1..size, or 1..sizeMax when the keys above `size` (optional ones) are there. */
function readMap(value: unknown, size: number, what: string, sizeMax = size): Map<unknown, unknown> {
  if (!(value instanceof Map)) throw invalid(`${what} is not a CBOR map`);
  if (value.size < size || value.size > sizeMax) throw invalid(`${what} has ${value.size} entries, expected ${size === sizeMax ? size : `${size} to ${sizeMax}`}`);
  for (const key of value.keys()) {
    if (typeof key !== 'number' || !Number.isInteger(key) || key < 1 || key > sizeMax) throw invalid(`${what} has an unknown key`);
  }
  for (let key = 1; key <= size; key += 1) if (!value.has(key)) throw invalid(`${what} lacks key ${key}`);
  return value;
}

function readBytes(map: Map<unknown, unknown>, key: number, length: number, what: string): Uint8Array {
  const value = map.get(key);
  if (!isBytes(value, length)) throw invalid(`${what} must be a byte string of ${length} bytes`);
  return value.slice();
}

function readText(map: Map<unknown, unknown>, key: number, what: string): string {
  const value = map.get(key);
  if (typeof value !== 'string') throw invalid(`${what} must be a text string`);
  return value;
}

function readTimestamp(map: Map<unknown, unknown>, key: number, what: string): number {
  const value = map.get(key);
  if (!isTimestampMs(value)) throw invalid(`${what} must be an unsigned integer of milliseconds up to 9999-12-31`);
  return value;
}

/**
 * Decodes the CBOR bytes into a PLC with every omitted field re-derived. Strict: non-canonical
 * encodings, duplicate or unknown keys, wrong types or lengths, tags, floats and trailing bytes
 * are all refused with `invalid_transport`. Does not verify signatures or chain rules.
 */
export function decodeTransport(bytes: Uint8Array): Plc {
  if (!(bytes instanceof Uint8Array) || bytes.length === 0 || bytes.length > transportBytesMax) {
    throw invalid(`transport form must be 1 to ${transportBytesMax} bytes`);
  }
  let decoded: unknown;
  try {
    decoded = decode(bytes, decodeOptions);
  } catch (error) {
    throw invalid(`not valid CBOR: ${error instanceof Error ? error.message : String(error)}`);
  }
  const top = readMap(decoded, 10, 'PLC', 11);
  const version = readText(top, plcKey.version, 'version');
  if (version !== protocolVersion) throw invalid(`unsupported version ${version}`);
  const amount = top.get(plcKey.amountMinor);
  if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount < 0) throw invalid('amount must be an unsigned integer');
  const commitment: PlcCommitment = {
    version: protocolVersion,
    tokenId: bytesToUuid(readBytes(top, plcKey.tokenId, tokenIdBytes, 'token id')),
    issuerPublicKey: readBytes(top, plcKey.issuerPublicKey, publicKeyBytes, 'issuer key'),
    amountMinor: BigInt(amount),
    currency: readText(top, plcKey.currency, 'currency'),
    createdAtMs: readTimestamp(top, plcKey.createdAtMs, 'created_at'),
    expiresAtMs: readTimestamp(top, plcKey.expiresAtMs, 'expires_at'),
    nonce: readBytes(top, plcKey.nonce, nonceBytes, 'nonce'),
  };
  const check = checkCommitmentFields(commitment);
  if (!check.ok) throw new ProtocolError('invalid_transport', check.detail, { reason: check.reason });
  const issuerSignature = readBytes(top, plcKey.issuerSignature, signatureBytes, 'issuer signature');
  const chain = top.get(plcKey.transferChain);
  if (!Array.isArray(chain)) throw invalid('transfer chain must be an array');
  if (chain.length > chainLengthMax) throw invalid(`transfer chain has more than ${chainLengthMax} records`);

  const commitmentHash = computeCommitmentHash(commitment);
  let prevHash = commitmentHash;
  let senderPublicKey = commitment.issuerPublicKey;
  const transferChain: TransferRecord[] = [];
  for (const [index, entry] of chain.entries()) {
    const map = readMap(entry, 4, `record ${index}`);
    const unsigned = {
      senderPublicKey,
      recipientPublicKey: readBytes(map, recordKey.recipientPublicKey, publicKeyBytes, `record ${index} recipient`),
      timestampMs: readTimestamp(map, recordKey.timestampMs, `record ${index} timestamp`),
      nonce: readBytes(map, recordKey.nonce, nonceBytes, `record ${index} nonce`),
      prevHash,
    };
    const hash = computeRecordHash(unsigned);
    if (hash.length !== hashBytes) throw new Error('assertion failed: record hash is 32 bytes');
    transferChain.push({ ...unsigned, signature: readBytes(map, recordKey.signature, signatureBytes, `record ${index} signature`), hash });
    prevHash = hash;
    senderPublicKey = unsigned.recipientPublicKey;
  }
  let plc: Plc = { commitment, commitmentHash, issuerSignature, transferChain };
  if (top.has(plcKey.issueReceipt)) {
    const receipt = top.get(plcKey.issueReceipt);
    if (!(receipt instanceof Uint8Array) || receipt.length < 1 || receipt.length > issueReceiptCarriedBytesMax) {
      throw invalid(`issue receipt must be a byte string of 1 to ${issueReceiptCarriedBytesMax} bytes`);
    }
    plc = { ...plc, issueReceipt: receipt.slice() };
  }
  // Canonical form only: re-encoding must give back the very same bytes. This refuses unsorted
  // keys, non-shortest integers and lengths, and any other second spelling of the same PLC.
  if (!bytesEqual(encodeTransport(plc), bytes)) throw invalid('CBOR is not in deterministic (canonical) encoding');
  return plc;
}

/**
 * The QR text: "PLC2:" followed by base45 of the CBOR bytes. Refuses (`transport_too_large`) a
 * chain longer than `transportHopsMax` or text longer than one QR code (version 40-L) holds.
 */
export function encodeTransportText(plc: Plc): string {
  const hopsMax = plc.issueReceipt === undefined ? transportHopsMax : transportHopsMaxWithReceipt;
  if (plc.transferChain.length > hopsMax) {
    throw new ProtocolError('transport_too_large', `the QR text form carries at most ${hopsMax} transfer records${plc.issueReceipt === undefined ? '' : ' beside an issue receipt'}`, {
      chainLength: plc.transferChain.length,
    });
  }
  const text = transportTextPrefix + base45Encode(encodeTransport(plc));
  if (text.length > qrAlphanumericCharsMax) {
    throw new ProtocolError('transport_too_large', `transport text is ${text.length} characters, one QR code holds ${qrAlphanumericCharsMax}`, {
      length: text.length,
    });
  }
  return text;
}

export function decodeTransportText(text: string): Plc {
  if (typeof text !== 'string' || text.length > qrAlphanumericCharsMax) {
    throw invalid(`transport text must be a string of at most ${qrAlphanumericCharsMax} characters`);
  }
  if (!text.startsWith(transportTextPrefix)) throw invalid(`transport text must start with ${transportTextPrefix}`);
  let bytes: Uint8Array;
  try {
    bytes = base45Decode(text.slice(transportTextPrefix.length));
  } catch (error) {
    throw invalid(`transport text is not base45: ${error instanceof Error ? error.message : String(error)}`);
  }
  return decodeTransport(bytes);
}
