import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { DomainError } from '../../src/errors.ts';
import { pinAttemptsMax } from '../../src/security/pin.ts';
import { errorResponse, standardErrors } from '../schemas/common.ts';
import { exampleKeyBackup, exampleKeyRecover, examplePin } from '../schemas/examples.ts';
import {
  keyBackupRequest,
  keyBackupResponse,
  keyCheckParams,
  keyCheckResponse,
  keyRecoverRequest,
  keyRecoverResponse,
  pinStatusRequest,
  pinStatusResponse,
  registerPinRequest,
  registerPinResponse,
  requestResetRequest,
  requestResetResponse,
  resetPinRequest,
  updateEmailRequest,
  verifyPinRequest,
  verifyPinResponse,
} from '../schemas/security.ts';
import type { PinState } from '../../services/security.ts';

/**
 * What each route refuses on its own (docs/security.md, "Errors"); the plugins add the rest (429
 * of the rate limits, 503, 500). A PIN attempt (verify, and the current PIN of an overwrite or an
 * e-mail update): 403 PIN_INCORRECT, 404 PIN_NOT_REGISTERED, 409 CONFLICT, 423 PIN_LOCKED.
 */
const attemptRefusals = { 403: errorResponse, 404: errorResponse, 409: errorResponse, 423: errorResponse, ...standardErrors };
/** For the descriptions of the routes that hash a PIN: their own reason for a 503 besides the plugins'. */
const noPepper = 'Without `PIN_PEPPER` configured: 503 `SERVICE_UNAVAILABLE`.';
const otherPepper = 'Without `PIN_PEPPER` configured, or for a PIN registered under another pepper: 503 `SERVICE_UNAVAILABLE` (nothing counted).';

/**
 * Every security route is limited per client address, counted in PostgreSQL (all replicas). The
 * device id is left out of the key on purpose: a client that changes X-Device-ID on every request
 * must not get a fresh allowance each time (docs/security.md, "Rate limits").
 */
function rateLimit(groupId: string, max: number) {
  return { rateLimit: { max, timeWindow: 60_000, groupId, keyGenerator: (request: FastifyRequest) => request.ip } };
}

function registerPinView(state: PinState, created: boolean) {
  return {
    owner_id: state.ownerId,
    registered: true as const,
    created,
    recovery_email_set: state.recoveryEmailSet,
    registered_at: state.registeredAt.toISOString(),
    updated_at: state.updatedAt.toISOString(),
  };
}

/** The spec's "Security (PIN and keys)" section: nine operations, no security scheme (Authentication 3). */
export async function securityRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { security, config } = app.deps;
  const perMinute = config.RATE_LIMIT_SECURITY_PER_MINUTE;
  // Reset e-mails to one owner, whatever address asks: a mailbox is not to be flooded.
  const resetsPerOwner = app.createRateLimit({
    max: config.PIN_RESET_REQUESTS_PER_HOUR,
    timeWindow: 3_600_000,
    keyGenerator: (request: FastifyRequest) => `pin-reset-owner:${(request.body as { owner_id: string }).owner_id}`,
  });

  routes.post(
    '/pin/register',
    {
      schema: {
        tags: ['security'],
        summary: 'Register a PIN (hash and salt); overwriting needs current_pin_hash',
        description:
          "Stores the owner's PIN as the client hashed it, with the client's salt (answered by `pin/status`, so a second device derives the same hash) and an optional recovery e-mail. The server keeps only a peppered scrypt of the hash (docs/security.md). The first registration needs no proof; a PIN already registered is replaced only with a correct `current_pin_hash`, which counts as a verification attempt. Refusals: 409 `PIN_ALREADY_REGISTERED` (no `current_pin_hash`), 403 `PIN_INCORRECT`, 423 `PIN_LOCKED`, 404 `PIN_NOT_REGISTERED` (an overwrite of nothing). " + otherPepper,
        body: registerPinRequest,
        requestExample: { body: { owner_id: examplePin.ownerId, pin_hash: examplePin.pinHash, salt: examplePin.salt, email: examplePin.email } },
        response: { 200: registerPinResponse, ...attemptRefusals },
      },
      config: rateLimit('security-pin-register', perMinute),
    },
    async (request) => {
      const body = request.body;
      const { created, state } = await security.registerPin({
        ownerId: body.owner_id,
        pinHash: body.pin_hash,
        salt: body.salt,
        email: body.email,
        currentPinHash: body.current_pin_hash,
      });
      return registerPinView(state, created);
    },
  );

  routes.post(
    '/pin/verify',
    {
      schema: {
        tags: ['security'],
        summary: `Compare a PIN hash; ${pinAttemptsMax} consecutive failures lock the PIN (423 until the lock ends)`,
        description: `One attempt, counted in PostgreSQL before the hash is compared, so that concurrent attempts through any number of replicas evaluate at most ${pinAttemptsMax} before the lock. A wrong PIN answers 200 with \`valid: false\` and the attempts remaining; the ${pinAttemptsMax}th also the \`locked_until\` it started (15 minutes, doubling on each further lock up to 24 hours). While locked every attempt, the right PIN included, answers 423 \`PIN_LOCKED\` with \`Retry-After\`. A success clears the count. 404 \`PIN_NOT_REGISTERED\`. ${otherPepper}`,
        body: verifyPinRequest,
        requestExample: { body: { owner_id: examplePin.ownerId, pin_hash: examplePin.pinHash } },
        response: { 200: verifyPinResponse, 404: errorResponse, 409: errorResponse, 423: errorResponse, ...standardErrors },
      },
      config: rateLimit('security-pin-verify', perMinute),
    },
    async (request) => {
      const verification = await security.verifyPin({ ownerId: request.body.owner_id, pinHash: request.body.pin_hash });
      return {
        owner_id: request.body.owner_id,
        valid: verification.valid,
        attempts_remaining: verification.attemptsRemaining,
        locked_until: verification.lockedUntil?.toISOString() ?? null,
      };
    },
  );

  routes.post(
    '/pin/status',
    {
      schema: {
        tags: ['security'],
        summary: "Whether an owner has a PIN, its client salt and its lock; nothing secret",
        description:
          "Whether the owner has a PIN, the salt its client hashed it with (a second device needs it to derive the same hash), whether a recovery e-mail is set (never the address), and the lock: `locked`, `locked_until`, `attempts_remaining`. An owner without a PIN answers `registered: false`. Nothing is counted.",
        body: pinStatusRequest,
        requestExample: { body: { owner_id: examplePin.ownerId } },
        response: { 200: pinStatusResponse, ...standardErrors },
      },
      config: rateLimit('security-pin-status', perMinute),
    },
    async (request) => {
      const state = await security.pinStatus(request.body.owner_id);
      if (state === null) {
        return { owner_id: request.body.owner_id, registered: false, salt: null, recovery_email_set: false, locked: false, locked_until: null, attempts_remaining: 0 };
      }
      return {
        owner_id: state.ownerId,
        registered: true,
        salt: state.clientSalt,
        recovery_email_set: state.recoveryEmailSet,
        locked: state.locked,
        locked_until: state.lockedUntil?.toISOString() ?? null,
        attempts_remaining: state.attemptsRemaining,
      };
    },
  );

  routes.post(
    '/pin/request-reset',
    {
      schema: {
        tags: ['security'],
        summary: 'E-mail a single-use reset code; the same answer whether or not owner and address match',
        description:
          "Starts the workflow `pin-reset-email-<request_id>` for every request and answers 202 with the same body whether or not the address is the owner's recovery e-mail, so neither the answer nor its timing tells. On a match the worker makes a 256-bit code, keeps only its hash for `PIN_RESET_TOKEN_TTL_MS` (30 minutes; a newer request voids it) and mails it. At most `PIN_RESET_REQUESTS_PER_HOUR` (5) per owner whatever the address asks (429 `RATE_LIMITED`). 501 `PIN_RESET_EMAIL_UNAVAILABLE` where no SMTP server is configured.",
        body: requestResetRequest,
        requestExample: { body: { owner_id: examplePin.ownerId, email: examplePin.email } },
        response: { 202: requestResetResponse, 501: errorResponse, ...standardErrors },
      },
      config: rateLimit('security-pin-request-reset', perMinute),
      preHandler: async (request) => {
        const limit = await resetsPerOwner(request);
        if (!limit.isAllowed && limit.isExceeded) {
          throw new DomainError('RATE_LIMITED', `at most ${limit.max} reset requests per owner per hour`, { retry_after_s: limit.ttlInSeconds });
        }
      },
    },
    async (request, reply) => {
      const { expiresInS } = await security.requestPinReset({ ownerId: request.body.owner_id, email: request.body.email });
      return reply.code(202).send({
        accepted: true as const,
        message: 'if this address is the recovery e-mail of this owner, a reset code is on its way',
        expires_in_s: expiresInS,
      });
    },
  );

  routes.post(
    '/pin/reset',
    {
      schema: {
        tags: ['security'],
        summary: 'Set a new PIN with an e-mailed reset code; ends any lock; the code works once',
        description:
          "Consumes the owner's latest reset code and sets the new PIN hash and salt in one statement: of two resets with one code, one succeeds. The failure count, any lock and the lockout history are cleared. Refusals: 422 `PIN_RESET_TOKEN_INVALID` with the reason in the type (`.malformed`, `.unknown` for a forged, another owner's or a voided code, `.used`, `.expired`). " + noPepper,
        body: resetPinRequest,
        requestExample: { body: { owner_id: examplePin.ownerId, token: examplePin.resetToken, pin_hash: examplePin.newPinHash, salt: examplePin.salt } },
        response: { 200: registerPinResponse, ...standardErrors },
      },
      config: rateLimit('security-pin-reset', perMinute),
    },
    async (request) => {
      const body = request.body;
      const state = await security.resetPin({ ownerId: body.owner_id, token: body.token, pinHash: body.pin_hash, salt: body.salt });
      return registerPinView(state, false);
    },
  );

  routes.post(
    '/email/update',
    {
      schema: {
        tags: ['security'],
        summary: 'Change the recovery e-mail; needs current_pin_hash (a verification attempt)',
        description:
          "Replaces the recovery e-mail (stored trimmed and lowercased) after a correct `current_pin_hash`, which counts as a verification attempt like `pin/verify`; any outstanding reset code is voided. Refusals: 403 `PIN_INCORRECT` (with the attempts remaining), 423 `PIN_LOCKED`, 404 `PIN_NOT_REGISTERED`. " + otherPepper,
        body: updateEmailRequest,
        requestExample: { body: { owner_id: examplePin.ownerId, current_pin_hash: examplePin.pinHash, email: 'alice.silva@example.com' } },
        response: { 200: registerPinResponse, ...attemptRefusals },
      },
      config: rateLimit('security-email-update', perMinute),
    },
    async (request) => {
      const body = request.body;
      const state = await security.updateEmail({ ownerId: body.owner_id, currentPinHash: body.current_pin_hash, email: body.email });
      return registerPinView(state, false);
    },
  );

  routes.post(
    '/key/backup',
    {
      schema: {
        tags: ['security'],
        summary: 'Store an encrypted seed per public key and device; any write but the first is signed',
        description:
          "Keeps the seed as the device encrypted it (opaque to the server; a wallet of this protocol seals it as docs/protocol.md 9.6 says) under the public key and device. Only the very first backup of a public key may come unsigned; every other write (overwriting this device's backup, or another device's) carries `device_signature`, an Ed25519 signature by `public_key` over `svc:backup:{device_id}:{public_key}:{operation_timestamp}`, within the clock tolerance, each signed message accepted once. Refusals: 409 `KEY_BACKUP_SIGNATURE_REQUIRED`, `KEY_BACKUP_DEVICES_EXCEEDED` (16 devices), `AUTHORIZATION_REPLAYED`; 422 `SIGNATURE_INVALID`, `AUTHORIZATION_STALE`.",
        body: keyBackupRequest,
        requestExample: { body: exampleKeyBackup },
        response: { 200: keyBackupResponse, 409: errorResponse, ...standardErrors },
      },
      config: rateLimit('security-key-backup', perMinute),
    },
    async (request) => {
      const body = request.body;
      const proof =
        body.device_signature === undefined || body.operation_timestamp === undefined
          ? undefined
          : { signatureHex: body.device_signature, operationTimestampMs: body.operation_timestamp };
      const { created, backup } = await security.backupKey({
        publicKey: body.public_key,
        deviceId: body.device_id,
        encryptedSeed: Buffer.from(body.encrypted_seed, 'hex'),
        proof,
      });
      return { public_key: backup.publicKey, device_id: backup.deviceId, created, backed_up_at: backup.updatedAt.toISOString() };
    },
  );

  routes.post(
    '/key/recover',
    {
      schema: {
        tags: ['security'],
        summary: 'The encrypted seed, for a fresh signature by its public key (each signature accepted once)',
        description:
          "Answers the device's encrypted seed for an Ed25519 signature by `public_key` over `svc:recover:{device_id}:{public_key}:{operation_timestamp}` (docs/protocol.md 9.3), within the clock tolerance; without a valid signature no seed is ever answered. Each signed message is accepted once: of identical recoveries sent to two replicas, exactly one gets the seed. `device_id` names the device whose backup is asked for (`GET key/check/{public_key}` lists them). Refusals: 404 `KEY_BACKUP_NOT_FOUND`; 409 `AUTHORIZATION_REPLAYED`; 422 `SIGNATURE_INVALID`, `AUTHORIZATION_STALE`.",
        body: keyRecoverRequest,
        requestExample: { body: exampleKeyRecover },
        response: { 200: keyRecoverResponse, 404: errorResponse, 409: errorResponse, ...standardErrors },
      },
      config: rateLimit('security-key-recover', perMinute),
    },
    async (request) => {
      const body = request.body;
      const backup = await security.recoverKey({
        publicKey: body.public_key,
        deviceId: body.device_id,
        proof: { signatureHex: body.device_signature, operationTimestampMs: body.operation_timestamp },
      });
      return {
        public_key: backup.publicKey,
        device_id: backup.deviceId,
        encrypted_seed: backup.encryptedSeed.toString('hex'),
        backed_up_at: backup.updatedAt.toISOString(),
      };
    },
  );

  routes.get(
    '/key/check/:public_key',
    {
      schema: {
        tags: ['security'],
        summary: 'Whether a backup of this public key exists, and from which devices',
        description:
          'Whether any device filed a backup under this public key, and which (device ids and when each backed up, newest first, 16 at most): what a device recovering from a passphrase asks before it signs its recovery. Nothing else about the backups is answered.',
        params: keyCheckParams,
        requestExample: { params: { public_key: exampleKeyBackup.public_key } },
        response: { 200: keyCheckResponse, ...standardErrors },
      },
      config: rateLimit('security-key-check', perMinute),
    },
    async (request) => {
      const { devices } = await security.checkKey(request.params.public_key);
      return {
        public_key: request.params.public_key,
        has_backup: devices.length > 0,
        devices: devices.map((device) => ({ device_id: device.deviceId, backed_up_at: device.backedUpAt.toISOString() })),
      };
    },
  );
}
