/**
 * Signed requests of the business customers' API credentials (docs/b2b.md, "Signing a request").
 * Isomorphic: the server checks with it, the `pos` client (bin/pos.ts) signs with it.
 *
 * The scheme is modelled on two that integrators already know: the canonical request of AWS
 * Signature Version 4 (method, path with its query, and the hex SHA-256 of the body, one per
 * line, and a signing key derived from the secret rather than the secret itself) and the
 * timestamped `v1=` signature of Stripe's webhooks and Standard Webhooks (a Unix timestamp
 * inside a freshness window, HMAC-SHA256, hex). A nonce, accepted once per key, closes the
 * replay window the timestamp alone leaves open.
 *
 *   string to sign = "PLC-HMAC-SHA256\n" + METHOD + "\n" + path?query + "\n" + timestamp + "\n" + nonce + "\n" + hex(SHA-256(body))
 *   signing key    = HMAC-SHA256(key = secret (UTF-8), "plc-settlement/api-signing-key/v1")
 *   X-PLC-Signature: v1=hex(HMAC-SHA256(signing key, string to sign))
 *
 * The server stores only the signing key, a one-way hash of the secret (the secret shown once
 * at issue cannot be recovered from the database).
 */
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8 } from '../protocol/bytes.ts';

export const signatureHeaders = {
  keyId: 'x-plc-key-id',
  timestamp: 'x-plc-timestamp',
  nonce: 'x-plc-nonce',
  signature: 'x-plc-signature',
} as const;

export const signatureAlgorithm = 'PLC-HMAC-SHA256';
export const signatureVersion = 'v1';
const signingKeyLabel = 'plc-settlement/api-signing-key/v1';

/** A key id: `ak_` and 24 lowercase hex digits. */
export const keyIdPattern = /^ak_[0-9a-f]{24}$/;
/** A secret: `sk_` and 43 base64url characters (32 random bytes). */
export const secretPattern = /^sk_[A-Za-z0-9_-]{43}$/;
/** A nonce: 16 to 64 characters of A-Z a-z 0-9 _ - (a UUID or 16 random bytes in hex both fit). */
export const noncePattern = /^[A-Za-z0-9_-]{16,64}$/;
/** A timestamp: Unix seconds, decimal, no sign. */
export const timestampPattern = /^[0-9]{1,12}$/;
export const signaturePattern = /^v1=[0-9a-f]{64}$/;

export interface SignedRequestParts {
  method: string;
  /** The path with its query string, exactly as sent (`/api/v1/pos/sync`). */
  pathWithQuery: string;
  /** Unix seconds. */
  timestamp: number;
  nonce: string;
  /** The raw body bytes as sent (empty for a request without one). */
  body: Uint8Array | string;
}

/** The signing key a secret stands for: what the server stores and both sides sign with. */
export function signingKeyOf(secret: string): Uint8Array {
  return hmac(sha256, utf8(secret), utf8(signingKeyLabel));
}

export function stringToSign(parts: SignedRequestParts): string {
  const body = typeof parts.body === 'string' ? utf8(parts.body) : parts.body;
  return [signatureAlgorithm, parts.method.toUpperCase(), parts.pathWithQuery, String(parts.timestamp), parts.nonce, bytesToHex(sha256(body))].join('\n');
}

/** The raw HMAC of a request (32 bytes). */
export function requestMac(signingKey: Uint8Array, parts: SignedRequestParts): Uint8Array {
  return hmac(sha256, signingKey, utf8(stringToSign(parts)));
}

/** The `X-PLC-Signature` value of a request. */
export function signatureHeaderValue(signingKey: Uint8Array, parts: SignedRequestParts): string {
  return `${signatureVersion}=${bytesToHex(requestMac(signingKey, parts))}`;
}

/** The four headers of a signed request, for a client holding the key id and its secret. */
export function signRequest(
  credential: { keyId: string; secret: string },
  request: { method: string; pathWithQuery: string; body?: string; timestamp?: number; nonce?: string },
): Record<string, string> {
  const timestamp = request.timestamp ?? Math.floor(Date.now() / 1000);
  const nonce = request.nonce ?? bytesToHex(globalThis.crypto.getRandomValues(new Uint8Array(16)));
  const signature = signatureHeaderValue(signingKeyOf(credential.secret), {
    method: request.method,
    pathWithQuery: request.pathWithQuery,
    timestamp,
    nonce,
    body: request.body ?? '',
  });
  return {
    [signatureHeaders.keyId]: credential.keyId,
    [signatureHeaders.timestamp]: String(timestamp),
    [signatureHeaders.nonce]: nonce,
    [signatureHeaders.signature]: signature,
  };
}
