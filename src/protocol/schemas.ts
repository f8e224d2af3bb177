/**
 * The JSON form: what the server API accepts as "the full PLC JSON" and what wallets exchange
 * when the compact form does not fit. Strict: unknown keys are refused, hex is lowercase with an
 * exact length, instants are ISO 8601 UTC with milliseconds, amounts are canonical decimal
 * strings. A value that passes `plcJsonSchema` always converts with `plcFromJson`.
 *
 * The JSON form carries the derived fields (commitment hash, each record's sender, previous hash
 * and hash) so that a reader can follow the chain without recomputing; `verifyPlc` recomputes
 * every one of them and refuses a PLC whose carried values differ.
 */
import { z } from 'zod';
import {
  chainLengthMax,
  destinationBytesMax,
  hashBytes,
  isPlcCurrency,
  nonceBytes,
  protocolVersion,
  publicKeyBytes,
  settlementRails,
  signatureBytes,
  timestampMsMax,
} from './constants.ts';
import { bytesToHex, hexToBytes, isCanonicalIso, isoToMs, isTimestampMs, msToIso, utf8 } from './bytes.ts';
import { formatAmountMinor, parseCanonicalAmount } from './amount.ts';
import { ProtocolError } from './errors.ts';
import type { CancelAuthorization, RedeemAuthorization } from './auth-messages.ts';
import { issueReceiptCarriedBytesMax } from './receipt.ts';
import type { Plc, TransferRecord } from './types.ts';

function hexSchema(bytes: number) {
  return z.string().regex(new RegExp(`^[0-9a-f]{${bytes * 2}}$`), `expected ${bytes * 2} lowercase hex digits`);
}

export const publicKeyHexSchema = hexSchema(publicKeyBytes);
export const hashHexSchema = hexSchema(hashBytes);
export const nonceHexSchema = hexSchema(nonceBytes);
export const signatureHexSchema = hexSchema(signatureBytes);
export const tokenIdSchema = z
  .string()
  .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'expected a lowercase UUID v4');
export const isoTimestampSchema = z
  .string()
  .refine(isCanonicalIso, 'expected an ISO 8601 UTC timestamp with milliseconds, e.g. 2026-11-22T10:00:00.000Z');
export const currencySchema = z.string().refine(isPlcCurrency, 'expected a protocol currency: BRL, USD or EUR');
/** Integer milliseconds since the epoch, 0 to `timestampMsMax`: an integer in JSON Schema (OpenAPI) too. */
export const timestampMsSchema = z
  .number()
  .int()
  .min(0)
  .max(timestampMsMax)
  .refine(isTimestampMs, 'expected integer milliseconds since the Unix epoch')
  .describe('integer milliseconds since the Unix epoch (UTC), 0 to 253402300799999');

/**
 * The service's issue receipt (docs/protocol.md section 19) as lowercase hex: carried opaque (1 to
 * 256 bytes), so a cut or damaged receipt reaches the verifier, which names what is wrong.
 */
export const issueReceiptHexSchema = z
  .string()
  .regex(new RegExp(`^(?:[0-9a-f]{2}){1,${issueReceiptCarriedBytesMax}}$`), `expected 1 to ${issueReceiptCarriedBytesMax} bytes of lowercase hex`)
  .describe(
    "the service's issue receipt (docs/protocol.md section 19), 137 bytes in lowercase hex: format 0x01, service key, commitment hash, issued_at (u64 ms), Ed25519 signature. Beside the commitment, not part of it: optional, and ignored by the server's intake",
  );

export const transferRecordJsonSchema = z.strictObject({
  sender_pubkey: publicKeyHexSchema,
  recipient_pubkey: publicKeyHexSchema,
  timestamp: isoTimestampSchema,
  nonce: nonceHexSchema,
  prev_hash: hashHexSchema,
  signature: signatureHexSchema,
  hash: hashHexSchema,
});

export type TransferRecordJson = z.infer<typeof transferRecordJsonSchema>;

export const plcJsonSchema = z
  .strictObject({
    version: z.literal(protocolVersion),
    token_id: tokenIdSchema,
    issuer_pubkey: publicKeyHexSchema,
    amount: z.string(),
    currency: currencySchema,
    created_at: isoTimestampSchema,
    expires_at: isoTimestampSchema,
    nonce: nonceHexSchema,
    commitment_hash: hashHexSchema,
    signature: signatureHexSchema,
    transfer_chain: z.array(transferRecordJsonSchema).max(chainLengthMax),
    issue_receipt: issueReceiptHexSchema.optional(),
  })
  .superRefine((value, ctx) => {
    if (isPlcCurrency(value.currency) && parseCanonicalAmount(value.amount, value.currency) === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['amount'],
        message: 'expected a canonical decimal amount with exactly the currency\'s decimals (e.g. "12.34"), greater than zero, at most 10^15 minor units',
      });
    }
  });

export type PlcJson = z.infer<typeof plcJsonSchema>;

export function transferRecordToJson(record: TransferRecord): TransferRecordJson {
  return {
    sender_pubkey: bytesToHex(record.senderPublicKey),
    recipient_pubkey: bytesToHex(record.recipientPublicKey),
    timestamp: msToIso(record.timestampMs),
    nonce: bytesToHex(record.nonce),
    prev_hash: bytesToHex(record.prevHash),
    signature: bytesToHex(record.signature),
    hash: bytesToHex(record.hash),
  };
}

export function plcToJson(plc: Plc): PlcJson {
  const c = plc.commitment;
  if (!isPlcCurrency(c.currency)) throw new ProtocolError('invalid_argument', `unsupported currency: ${c.currency}`);
  return {
    version: c.version,
    token_id: c.tokenId,
    issuer_pubkey: bytesToHex(c.issuerPublicKey),
    amount: formatAmountMinor(c.amountMinor, c.currency),
    currency: c.currency,
    created_at: msToIso(c.createdAtMs),
    expires_at: msToIso(c.expiresAtMs),
    nonce: bytesToHex(c.nonce),
    commitment_hash: bytesToHex(plc.commitmentHash),
    signature: bytesToHex(plc.issuerSignature),
    transfer_chain: plc.transferChain.map(transferRecordToJson),
    ...(plc.issueReceipt === undefined ? {} : { issue_receipt: bytesToHex(plc.issueReceipt) }),
  };
}

function transferRecordFromJson(json: TransferRecordJson): TransferRecord {
  return {
    senderPublicKey: hexToBytes(json.sender_pubkey, publicKeyBytes),
    recipientPublicKey: hexToBytes(json.recipient_pubkey, publicKeyBytes),
    timestampMs: isoToMs(json.timestamp),
    nonce: hexToBytes(json.nonce, nonceBytes),
    prevHash: hexToBytes(json.prev_hash, hashBytes),
    signature: hexToBytes(json.signature, signatureBytes),
    hash: hexToBytes(json.hash, hashBytes),
  };
}

/** Converts a value that passed `plcJsonSchema`. Carried hashes are kept as carried. */
export function plcFromJson(json: PlcJson): Plc {
  const amountMinor = parseCanonicalAmount(json.amount, json.currency);
  if (amountMinor === undefined) throw new ProtocolError('invalid_json', 'amount is not canonical for its currency');
  return {
    commitment: {
      version: json.version,
      tokenId: json.token_id,
      issuerPublicKey: hexToBytes(json.issuer_pubkey, publicKeyBytes),
      amountMinor,
      currency: json.currency,
      createdAtMs: isoToMs(json.created_at),
      expiresAtMs: isoToMs(json.expires_at),
      nonce: hexToBytes(json.nonce, nonceBytes),
    },
    commitmentHash: hexToBytes(json.commitment_hash, hashBytes),
    issuerSignature: hexToBytes(json.signature, signatureBytes),
    transferChain: json.transfer_chain.map(transferRecordFromJson),
    ...(json.issue_receipt === undefined ? {} : { issueReceipt: hexToBytes(json.issue_receipt) }),
  };
}

function schemaError(what: string, error: z.ZodError): ProtocolError {
  const issues = error.issues.map((issue) => ({ path: issue.path.map(String).join('.'), message: issue.message }));
  return new ProtocolError('invalid_json', `${what} fails its schema: ${issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}`, {
    issues,
  });
}

/** Schema check and conversion in one step; throws `invalid_json` listing every issue. */
export function parsePlcJson(input: unknown): Plc {
  const result = plcJsonSchema.safeParse(input);
  if (!result.success) throw schemaError('PLC JSON', result.error);
  return plcFromJson(result.data);
}

// ---------------------------------------------------------------------------------------------
// Authorisations. Timestamps here are integer milliseconds, exactly the signed value, like the
// spec's `operation_timestamp`; there is nothing to gain from an ISO round trip.

export const cancelAuthorizationJsonSchema = z.strictObject({
  token_id: tokenIdSchema,
  commitment_hash: hashHexSchema,
  timestamp_ms: timestampMsSchema,
  issuer_pubkey: publicKeyHexSchema,
  signature: signatureHexSchema,
});

export type CancelAuthorizationJson = z.infer<typeof cancelAuthorizationJsonSchema>;

export function cancelAuthorizationToJson(auth: CancelAuthorization): CancelAuthorizationJson {
  return {
    token_id: auth.tokenId,
    commitment_hash: bytesToHex(auth.commitmentHash),
    timestamp_ms: auth.timestampMs,
    issuer_pubkey: bytesToHex(auth.issuerPublicKey),
    signature: bytesToHex(auth.signature),
  };
}

export function parseCancelAuthorizationJson(input: unknown): CancelAuthorization {
  const result = cancelAuthorizationJsonSchema.safeParse(input);
  if (!result.success) throw schemaError('cancel authorisation', result.error);
  const json = result.data;
  return {
    tokenId: json.token_id,
    commitmentHash: hexToBytes(json.commitment_hash, hashBytes),
    timestampMs: json.timestamp_ms,
    issuerPublicKey: hexToBytes(json.issuer_pubkey, publicKeyBytes),
    signature: hexToBytes(json.signature, signatureBytes),
  };
}

export const redeemAuthorizationJsonSchema = z.strictObject({
  token_id: tokenIdSchema,
  head_hash: hashHexSchema,
  settlement_rail: z.enum(settlementRails),
  destination: z
    .string()
    .min(1)
    .max(destinationBytesMax)
    .refine((value) => {
      const length = utf8(value).length;
      return length >= 1 && length <= destinationBytesMax;
    }, `expected 1 to ${destinationBytesMax} UTF-8 bytes`)
    .describe(
      `1 to ${destinationBytesMax} UTF-8 bytes, signed as such (docs/protocol.md 9.2). What each rail accepts: pix, a Pix key of at most 77 characters; boleto, a digitable line of 47 or 48 digits`,
    ),
  timestamp_ms: timestampMsSchema,
  bearer_pubkey: publicKeyHexSchema,
  signature: signatureHexSchema,
});

export type RedeemAuthorizationJson = z.infer<typeof redeemAuthorizationJsonSchema>;

export function redeemAuthorizationToJson(auth: RedeemAuthorization): RedeemAuthorizationJson {
  return {
    token_id: auth.tokenId,
    head_hash: bytesToHex(auth.headHash),
    settlement_rail: auth.settlementRail,
    destination: auth.destination,
    timestamp_ms: auth.timestampMs,
    bearer_pubkey: bytesToHex(auth.bearerPublicKey),
    signature: bytesToHex(auth.signature),
  };
}

/** A redeem authorisation already validated by `redeemAuthorizationJsonSchema` (a route's body), as bytes. */
export function redeemAuthorizationFromJson(json: RedeemAuthorizationJson): RedeemAuthorization {
  return {
    tokenId: json.token_id,
    headHash: hexToBytes(json.head_hash, hashBytes),
    settlementRail: json.settlement_rail,
    destination: json.destination,
    timestampMs: json.timestamp_ms,
    bearerPublicKey: hexToBytes(json.bearer_pubkey, publicKeyBytes),
    signature: hexToBytes(json.signature, signatureBytes),
  };
}

export function parseRedeemAuthorizationJson(input: unknown): RedeemAuthorization {
  const result = redeemAuthorizationJsonSchema.safeParse(input);
  if (!result.success) throw schemaError('redeem authorisation', result.error);
  return redeemAuthorizationFromJson(result.data);
}
