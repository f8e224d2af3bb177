/**
 * The fixed parameters of the offline protocol, version 2.0. Every value here is part of the
 * published specification (docs/protocol.md): changing one changes the protocol, so each is a
 * constant, not configuration. The only tunable is the clock tolerance, passed per call.
 */

export const protocolVersion = '2.0';
export type ProtocolVersion = typeof protocolVersion;

const asciiEncoder = new TextEncoder();

/**
 * Domain-separation tags. Each signed or hashed structure starts with its own tag, so that bytes
 * produced for one purpose can never be taken for another. The structural tags end in a NUL byte
 * and the authorisation tags end in ':', which makes the whole set prefix-free.
 */
export const domainTags = {
  commitment: asciiEncoder.encode('svc:plc:commitment:v2\0'),
  transfer: asciiEncoder.encode('svc:plc:transfer:v2\0'),
  record: asciiEncoder.encode('svc:plc:record:v2\0'),
  sealedKdfSalt: asciiEncoder.encode('svc:plc:sealed:v2\0'),
  sealedAad: asciiEncoder.encode('svc:plc:sealed:aad:v2\0'),
  cancel: asciiEncoder.encode('svc:cancel:v2:'),
  redeem: asciiEncoder.encode('svc:redeem:v2:'),
  /** The service's issue receipt (receipt.ts): its own version, like the blocklist's. */
  receipt: asciiEncoder.encode('svc:plc:receipt:v1\0'),
} as const;

export const publicKeyBytes = 32;
export const secretKeyBytes = 32;
export const signatureBytes = 64;
export const hashBytes = 32;
/** 128-bit nonces, as the spec's Limits table requires for transfer records. */
export const nonceBytes = 16;
export const tokenIdBytes = 16;

/** Longest transfer chain a PLC may carry: bounds verification at 33 signature checks. */
export const chainLengthMax = 32;

/** The spec's PLC time to live: 1 hour to 168 hours (7 days), both inclusive. */
export const ttlHoursMin = 1;
export const ttlHoursMax = 168;
export const hourMs = 3_600_000;
export const ttlMsMin = ttlHoursMin * hourMs;
export const ttlMsMax = ttlHoursMax * hourMs;

/** Default clock tolerance for offline checks against a device clock (spec: 5 minutes). */
export const clockToleranceMsDefault = 5 * 60_000;
/** Bound on the configurable tolerance: more than an hour would make expiry meaningless. */
export const clockToleranceMsMax = hourMs;

/**
 * Largest instant the protocol can carry: 9999-12-31T23:59:59.999Z, the last instant with a
 * four-digit year in ISO 8601. Far below 2^53, so every timestamp is an exact JS number.
 */
export const timestampMsMax = 253_402_300_799_999;

/**
 * Largest PLC amount in minor units: 10^15 (10 trillion BRL). It fits a signed 64-bit integer
 * with room for sums, is an exact IEEE-754 double (so JSON and CBOR tool chains in any language
 * read it without loss), and equals the ledger's own posting bound (src/money/currency.ts), so
 * every valid PLC can be booked.
 */
export const amountMinorMax = 1_000_000_000_000_000n;

/**
 * Currencies of the protocol with their ISO 4217 minor units. The decimals are bound into the
 * commitment bytes, so a PLC can never be read at another scale than the one it was signed at.
 */
export const currencyDecimals = { BRL: 2, USD: 2, EUR: 2 } as const;
export type PlcCurrency = keyof typeof currencyDecimals;

export function isPlcCurrency(value: string): value is PlcCurrency {
  return Object.hasOwn(currencyDecimals, value);
}

/**
 * Capacity of one QR code, version 40, error correction L, alphanumeric mode (ISO/IEC 18004
 * table 7). The transport text form is built from the alphanumeric character set only.
 */
export const qrAlphanumericCharsMax = 4296;

/** Prefix of the transport text form; QR alphanumeric characters only. */
export const transportTextPrefix = 'PLC2:';

/**
 * Most transfer records the transport text form carries. Measured, not estimated: a worst-case
 * PLC (largest amount, every integer at its widest CBOR encoding) with 20 records is 2,801 CBOR
 * bytes and 4,207 text characters; with 21 it is 2,932 bytes and 4,403 characters, over the QR
 * capacity. test/src/protocol/transport.test.ts re-measures it.
 */
export const transportHopsMax = 20;

/**
 * Most transfer records the text form carries when the PLC also carries its issue receipt
 * (receipt.ts, 140 more CBOR bytes): a worst-case PLC with its receipt and 19 records is 2,810
 * bytes and 4,220 characters; with 20 it is 2,941 bytes and 4,417 characters, over the QR
 * capacity. test/src/protocol/receipt.test.ts re-measures it.
 */
export const transportHopsMaxWithReceipt = 19;

/** Bound on what the binary transport decoder accepts: a full 32-record chain is 4,374 bytes. */
export const transportBytesMax = 8192;

/** Freshness window for signed authorisation messages (cancel, redeem, key backup/recovery). */
export const authFreshnessWindowMsDefault = 5 * 60_000;

/** Sealed form: format version byte, 24-byte XChaCha20 nonce, 16-byte Poly1305 tag. */
export const sealedFormatVersion = 0x02;
export const sealedNonceBytes = 24;
export const sealedTagBytes = 16;
/** Largest plaintext the sealed form carries; a full chain in CBOR is far below it. */
export const sealedPlaintextBytesMax = 65_536;

/** Settlement rails a redeem authorisation may name. */
export const settlementRails = ['pix', 'boleto'] as const;
export type SettlementRail = (typeof settlementRails)[number];
/** Bound on the destination (Pix key, boleto digitable line) in UTF-8 bytes. */
export const destinationBytesMax = 140;

/**
 * Device ids inside the key backup/recovery text messages. ':' is excluded because it separates
 * the message's fields; without that rule two different (device id, key) pairs could produce the
 * same text.
 */
export const deviceIdPattern = /^[A-Za-z0-9._-]{1,128}$/;
