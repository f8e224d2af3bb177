import { createHmac, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * The server's slow hash of a client's PIN hash (docs/security.md, "Stored PIN").
 *
 *   verifier = scrypt(HMAC-SHA256(key = PIN_PEPPER, "svc:pin:v1" | 0x00 | owner_id | 0x00 | pin hash (32)),
 *                     salt = 16 random bytes of the record, N = 2^15, r = 8, p = 1, 32 bytes)
 *
 * The client's hash is itself a credential (whoever has it passes verification), so it is stored
 * only through this. The pepper is outside the database: a stolen table without it allows no
 * guess at all. The owner id inside the HMAC ties a verifier to its row. scrypt runs in libuv's
 * thread pool (node:crypto's async form), so a verification never blocks the event loop; about
 * 80 ms of CPU and 32 MiB on the development machine (`npm run bench:security`).
 */

export interface PinKdfParams {
  readonly log2N: number;
  readonly r: number;
  readonly p: number;
}

/** Chosen with `npm run bench:security`: under 100 ms of CPU per verification (docs/security.md). */
export const pinKdfDefault: PinKdfParams = { log2N: 15, r: 8, p: 1 };

export const verifierBytes = 32;
export const serverSaltBytes = 16;
const pinHashBytes = 32;

export interface PinVerifier {
  readonly verifier: Buffer;
  readonly serverSalt: Buffer;
  readonly params: PinKdfParams;
  readonly pepperId: string;
}

export interface PinHasher {
  /** Names the pepper (16 hex digits of an HMAC of a fixed label): stored with each record, never the pepper itself. */
  readonly pepperId: string;
  readonly params: PinKdfParams;
  /** A new verifier for an owner's PIN hash, under a fresh server salt. */
  create(ownerId: string, pinHashHex: string): Promise<PinVerifier>;
  /** Whether `pinHashHex` is the PIN hash `stored` was made from; constant-time comparison. */
  matches(ownerId: string, pinHashHex: string, stored: Omit<PinVerifier, 'pepperId'>): Promise<boolean>;
}

function scryptAsync(input: Buffer, salt: Buffer, params: PinKdfParams): Promise<Buffer> {
  const N = 2 ** params.log2N;
  return new Promise((resolve, reject) => {
    scrypt(input, salt, verifierBytes, { N, r: params.r, p: params.p, maxmem: 256 * N * params.r + 1024 * 1024 }, (error, key) =>
      error === null ? resolve(key) : reject(error),
    );
  });
}

export function createPinHasher(pepper: string, params: PinKdfParams = pinKdfDefault): PinHasher {
  if (pepper.length < 32) throw new RangeError('the PIN pepper must be at least 32 characters');
  const pepperKey = Buffer.from(pepper, 'utf8');
  const pepperId = createHmac('sha256', pepperKey).update('svc:pin-pepper-id:v1').digest('hex').slice(0, 16);

  function peppered(ownerId: string, pinHashHex: string): Buffer {
    const pinHash = Buffer.from(pinHashHex, 'hex');
    if (pinHash.length !== pinHashBytes || !/^[0-9a-f]{64}$/.test(pinHashHex)) throw new RangeError('a PIN hash is 64 lowercase hex digits');
    return createHmac('sha256', pepperKey)
      .update('svc:pin:v1\0')
      .update(ownerId, 'utf8')
      .update('\0')
      .update(pinHash)
      .digest();
  }

  return {
    pepperId,
    params,
    async create(ownerId, pinHashHex) {
      const serverSalt = randomBytes(serverSaltBytes);
      const verifier = await scryptAsync(peppered(ownerId, pinHashHex), serverSalt, params);
      return { verifier, serverSalt, params, pepperId };
    },
    async matches(ownerId, pinHashHex, stored) {
      const candidate = await scryptAsync(peppered(ownerId, pinHashHex), stored.serverSalt, stored.params);
      return candidate.length === stored.verifier.length && timingSafeEqual(candidate, stored.verifier);
    },
  };
}
