import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { findKeyBackup, listKeyBackups, lockKeyBackups, pruneKeyAuthorizations, recordKeyAuthorization, upsertKeyBackup } from '../db/key-backups.ts';
import { withTransaction, type Pool, type Queryable } from '../db/pool.ts';
import {
  findPinResetToken,
  findPinStatus,
  insertPinRecord,
  recordPinSuccess,
  replacePinCredential,
  reservePinAttempt,
  resetPinWithToken,
  updateRecoveryEmail,
  type NewPinCredential,
  type PinCredentialRow,
  type PinStatusRow,
} from '../db/security-pins.ts';
import type { Config } from '../infra/config.ts';
import { nodeVerifyEd25519 } from '../infra/ed25519-node.ts';
import { createPinHasher, type PinHasher } from '../infra/pin-hasher.ts';
import { DomainError } from '../src/errors.ts';
import { checkFreshness, keyOperationMessage, type KeyOperationKind } from '../src/protocol/auth-messages.ts';
import { hexToBytes, utf8 } from '../src/protocol/bytes.ts';
import type { SignatureVerifier } from '../src/protocol/keys.ts';
import { backupDevicesPerKeyMax, decideBackup } from '../src/security/key-backup.ts';
import { attemptsRemaining, isResetTokenShaped, lockoutScheduleMs, normalizeEmail, pinAttemptsMax } from '../src/security/pin.ts';
import type { pinResetEmailWorkflow } from '../workflows/pin-reset-email.ts';
import { workflowIds } from '../workflows/ids.ts';
import { ownerIdKey, referenceIdKey } from '../workflows/search-attributes.ts';

/**
 * The spec's "Security (PIN and keys)" operations (docs/security.md): PIN registration,
 * verification with a lockout counted in PostgreSQL, reset by e-mail, the recovery e-mail, and
 * signed key backup and recovery. Routes parse and answer; every decision is here or in
 * `src/security/`, every statement in `db/security-pins.ts` and `db/key-backups.ts`.
 */

export interface PinState {
  readonly ownerId: string;
  readonly clientSalt: string;
  readonly recoveryEmailSet: boolean;
  readonly attemptsRemaining: number;
  readonly lockedUntil: Date | null;
  readonly locked: boolean;
  readonly registeredAt: Date;
  readonly updatedAt: Date;
}

export interface PinVerification {
  readonly valid: boolean;
  readonly attemptsRemaining: number;
  readonly lockedUntil: Date | null;
}

export interface KeyBackupRecord {
  readonly publicKey: string;
  readonly deviceId: string;
  readonly encryptedSeed: Buffer;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface KeyOperationProof {
  readonly signatureHex: string;
  readonly operationTimestampMs: number;
}

export interface SecurityService {
  registerPin(input: { ownerId: string; pinHash: string; salt: string; email?: string | undefined; currentPinHash?: string | undefined }): Promise<{ created: boolean; state: PinState }>;
  verifyPin(input: { ownerId: string; pinHash: string }): Promise<PinVerification>;
  pinStatus(ownerId: string): Promise<PinState | null>;
  requestPinReset(input: { ownerId: string; email: string }): Promise<{ expiresInS: number }>;
  resetPin(input: { ownerId: string; token: string; pinHash: string; salt: string }): Promise<PinState>;
  updateEmail(input: { ownerId: string; currentPinHash: string; email: string }): Promise<PinState>;
  backupKey(input: { publicKey: string; deviceId: string; encryptedSeed: Buffer; proof?: KeyOperationProof | undefined }): Promise<{ created: boolean; backup: KeyBackupRecord }>;
  recoverKey(input: { publicKey: string; deviceId: string; proof: KeyOperationProof }): Promise<KeyBackupRecord>;
  checkKey(publicKey: string): Promise<{ devices: { deviceId: string; backedUpAt: Date }[] }>;
}

export interface SecurityServiceDeps {
  readonly pool: Pool;
  readonly temporal: Pick<Client, 'workflow'>;
  readonly config: Pick<
    Config,
    'PIN_PEPPER' | 'PIN_LOCKOUT_MS' | 'PIN_LOCKOUT_MAX_MS' | 'PIN_RESET_TOKEN_TTL_MS' | 'SMTP_URL' | 'CLOCK_TOLERANCE_MS' | 'TEMPORAL_TASK_QUEUE'
  >;
  /** Tests and the benchmark bring their own (parameters, counting); otherwise made from PIN_PEPPER. */
  readonly hasher?: PinHasher;
  readonly verifySignature?: SignatureVerifier;
  readonly nowMs?: () => number;
}

/** Accepted key operations between two prunes of the replay records. */
const pruneEveryAccepted = 200;
const pruneBatchMax = 1000;
/** Reservation rounds at most when the record changes between the reservation and the follow-up read. */
const reserveRoundsMax = 3;

function toPinState(row: PinStatusRow): PinState {
  return {
    ownerId: row.owner_id,
    clientSalt: row.client_salt,
    recoveryEmailSet: row.recovery_email_set,
    attemptsRemaining: attemptsRemaining(row.failed_attempts, row.locked),
    lockedUntil: row.locked ? row.locked_until : null,
    locked: row.locked,
    registeredAt: row.registered_at,
    updatedAt: row.updated_at,
  };
}

function toBackupRecord(row: { public_key: string; device_id: string; encrypted_seed: Buffer; created_at: Date; updated_at: Date }): KeyBackupRecord {
  return { publicKey: row.public_key, deviceId: row.device_id, encryptedSeed: row.encrypted_seed, createdAt: row.created_at, updatedAt: row.updated_at };
}

function lockedError(lockedUntil: Date, nowMs: number): DomainError {
  return new DomainError('PIN_LOCKED', `too many wrong PINs: locked until ${lockedUntil.toISOString()}`, {
    locked_until: lockedUntil.toISOString(),
    retry_after_s: Math.max(1, Math.ceil((lockedUntil.getTime() - nowMs) / 1000)),
  });
}

type TokenRefusalReason = 'unknown' | 'used' | 'expired';

function tokenError(reason: TokenRefusalReason): DomainError {
  const message = {
    unknown: 'this reset code is not the latest one sent for this owner',
    used: 'this reset code was already used',
    expired: 'this reset code has expired; ask for a new one',
  }[reason];
  return new DomainError('PIN_RESET_TOKEN_INVALID', message, { field: 'token', reason });
}

/** Why a reset code is refused, or null when the owner's live token is this one, unused and unexpired. */
function tokenRefusal(stored: { token_hash: Buffer; consumed: boolean; expired: boolean } | null, tokenHash: Buffer): DomainError | null {
  if (stored === null || !timingSafeEqual(stored.token_hash, tokenHash)) return tokenError('unknown');
  if (stored.consumed) return tokenError('used');
  if (stored.expired) return tokenError('expired');
  return null;
}

function sha256(data: string | Buffer): Buffer {
  return createHash('sha256').update(data).digest();
}

export function createSecurityService(deps: SecurityServiceDeps): SecurityService {
  const { pool, config } = deps;
  const nowMs = deps.nowMs ?? Date.now;
  const verifySignature = deps.verifySignature ?? nodeVerifyEd25519;
  const hasher: PinHasher | null = deps.hasher ?? (config.PIN_PEPPER === undefined ? null : createPinHasher(config.PIN_PEPPER));
  const schedule = lockoutScheduleMs(config.PIN_LOCKOUT_MS, config.PIN_LOCKOUT_MAX_MS);
  let acceptedSincePrune = 0;

  function requireHasher(): PinHasher {
    if (hasher === null) throw new DomainError('SERVICE_UNAVAILABLE', 'PINs are not available: PIN_PEPPER is not configured');
    return hasher;
  }

  async function newCredential(ownerId: string, pinHash: string, clientSalt: string): Promise<NewPinCredential> {
    const made = await requireHasher().create(ownerId, pinHash);
    return {
      ownerId,
      clientSalt,
      verifier: made.verifier,
      serverSalt: made.serverSalt,
      log2N: made.params.log2N,
      r: made.params.r,
      p: made.params.p,
      pepperId: made.pepperId,
    };
  }

  /**
   * One PIN attempt: reserved (counted as a failure) by the guarded statement, then evaluated.
   * Refused without any hashing while the PIN is locked.
   */
  async function attempt(ownerId: string, presented: string): Promise<{ verified: true; row: PinCredentialRow } | { verified: false; verification: PinVerification }> {
    const pinHasher = requireHasher();
    for (let round = 0; round < reserveRoundsMax; round += 1) {
      const reserved = await reservePinAttempt(pool, { ownerId, pepperId: pinHasher.pepperId, attemptsMax: pinAttemptsMax, lockoutScheduleMs: schedule });
      if (reserved === null) {
        const status = await findPinStatus(pool, ownerId);
        if (status === null) throw new DomainError('PIN_NOT_REGISTERED', 'no PIN is registered for this owner');
        if (status.pepper_id !== pinHasher.pepperId) {
          // Every right PIN would fail: a configuration error, never the user's fault, so nothing is counted.
          throw new DomainError('SERVICE_UNAVAILABLE', 'this PIN was registered under another PIN_PEPPER than the one configured');
        }
        if (status.locked && status.locked_until !== null) throw lockedError(status.locked_until, nowMs());
        // The lock ended, or a success cleared the count, between the two statements: try again.
        continue;
      }
      const matches = await pinHasher.matches(ownerId, presented, {
        verifier: reserved.verifier,
        serverSalt: reserved.server_salt,
        params: { log2N: reserved.scrypt_log2_n, r: reserved.scrypt_r, p: reserved.scrypt_p },
      });
      if (matches) return { verified: true, row: reserved };
      const lockedUntil = reserved.locked_until;
      return {
        verified: false,
        verification: {
          valid: false,
          // A lock this reservation started lies in the future: the answer needs no clock.
          attemptsRemaining: attemptsRemaining(reserved.failed_attempts, lockedUntil !== null),
          lockedUntil,
        },
      };
    }
    throw new DomainError('CONFLICT', 'the PIN record changed during the attempt; try again');
  }

  function incorrect(verification: PinVerification): DomainError {
    return new DomainError('PIN_INCORRECT', 'current_pin_hash is not the current PIN', {
      attempts_remaining: verification.attemptsRemaining,
      locked_until: verification.lockedUntil?.toISOString() ?? null,
    });
  }

  const changedMeanwhile = (): DomainError => new DomainError('CONFLICT', 'the PIN changed while this request was being checked; try again');

  /** The SHA-256 of the signed message, once its timestamp is fresh and its signature verifies. */
  function verifiedKeyOperation(kind: KeyOperationKind, publicKey: string, deviceId: string, proof: KeyOperationProof): Buffer {
    const freshness = checkFreshness(proof.operationTimestampMs, nowMs(), config.CLOCK_TOLERANCE_MS);
    if (!freshness.ok) {
      throw new DomainError('AUTHORIZATION_STALE', `operation_timestamp must be within ${config.CLOCK_TOLERANCE_MS} ms of the server clock`, {
        field: 'operation_timestamp',
        reason: freshness.reason,
      });
    }
    const message = keyOperationMessage(kind, { deviceId, publicKey: hexToBytes(publicKey, 32), operationTimestampMs: proof.operationTimestampMs });
    const messageBytes = utf8(message);
    if (!verifySignature(hexToBytes(proof.signatureHex, 64), messageBytes, hexToBytes(publicKey, 32))) {
      throw new DomainError('SIGNATURE_INVALID', `device_signature is not a valid Ed25519 signature by public_key over "svc:${kind}:..."`, {
        field: 'device_signature',
      });
    }
    return sha256(Buffer.from(messageBytes));
  }

  async function recordOnce(client: Queryable, operation: KeyOperationKind, publicKey: string, deviceId: string, messageHash: Buffer, proof: KeyOperationProof): Promise<void> {
    const recorded = await recordKeyAuthorization(client, {
      messageHash,
      operation,
      publicKey,
      deviceId,
      forgetAfterMs: proof.operationTimestampMs + config.CLOCK_TOLERANCE_MS,
    });
    if (!recorded) throw new DomainError('AUTHORIZATION_REPLAYED', `this ${operation} authorisation was already used; sign a new one`);
  }

  function pruneNowAndThen(): void {
    acceptedSincePrune += 1;
    if (acceptedSincePrune < pruneEveryAccepted) return;
    acceptedSincePrune = 0;
    void pruneKeyAuthorizations(pool, pruneBatchMax).catch(() => {});
  }

  return {
    async registerPin(input) {
      if (input.currentPinHash === undefined) {
        requireHasher();
        if ((await findPinStatus(pool, input.ownerId)) !== null) {
          throw new DomainError('PIN_ALREADY_REGISTERED', 'a PIN is registered for this owner: send current_pin_hash to change it');
        }
        const credential = await newCredential(input.ownerId, input.pinHash, input.salt);
        const row = await insertPinRecord(pool, credential, input.email === undefined ? null : normalizeEmail(input.email));
        if (row === null) throw new DomainError('PIN_ALREADY_REGISTERED', 'a PIN is registered for this owner: send current_pin_hash to change it');
        return { created: true, state: toPinState(row) };
      }
      const result = await attempt(input.ownerId, input.currentPinHash);
      if (!result.verified) throw incorrect(result.verification);
      const credential = await newCredential(input.ownerId, input.pinHash, input.salt);
      const row = await replacePinCredential(pool, credential, result.row.credential_version, input.email === undefined ? undefined : normalizeEmail(input.email));
      if (row === null) throw changedMeanwhile();
      return { created: false, state: toPinState(row) };
    },

    async verifyPin(input) {
      const result = await attempt(input.ownerId, input.pinHash);
      if (!result.verified) return result.verification;
      if (!(await recordPinSuccess(pool, input.ownerId, result.row.credential_version))) throw changedMeanwhile();
      return { valid: true, attemptsRemaining: pinAttemptsMax, lockedUntil: null };
    },

    async pinStatus(ownerId) {
      const row = await findPinStatus(pool, ownerId);
      return row === null ? null : toPinState(row);
    },

    async requestPinReset(input) {
      if (config.SMTP_URL === undefined) {
        throw new DomainError('PIN_RESET_EMAIL_UNAVAILABLE', 'PIN reset by e-mail is not available: this deployment has no SMTP server (SMTP_URL)');
      }
      // Every request starts the same workflow, matching or not, and the answer is the same: the
      // activity alone learns whether the owner and the address match.
      const requestId = randomUUID();
      await deps.temporal.workflow.start<typeof pinResetEmailWorkflow>('pinResetEmailWorkflow', {
        workflowId: workflowIds.pinResetEmail(requestId),
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        args: [{ requestId, ownerId: input.ownerId, emailSha256: sha256(normalizeEmail(input.email)).toString('hex') }],
        typedSearchAttributes: [
          { key: ownerIdKey, value: input.ownerId },
          { key: referenceIdKey, value: requestId },
        ],
      });
      return { expiresInS: Math.floor(config.PIN_RESET_TOKEN_TTL_MS / 1000) };
    },

    async resetPin(input) {
      requireHasher();
      if (!isResetTokenShaped(input.token)) {
        throw new DomainError('PIN_RESET_TOKEN_INVALID', 'the reset code is 43 characters of A-Z a-z 0-9 - _', { field: 'token', reason: 'malformed' });
      }
      const tokenHash = sha256(input.token);
      // A cheap look first, so that a guessed code costs no slow hash; the statement below decides.
      const refusal = tokenRefusal(await findPinResetToken(pool, input.ownerId), tokenHash);
      if (refusal !== null) throw refusal;
      const credential = await newCredential(input.ownerId, input.pinHash, input.salt);
      const row = await resetPinWithToken(pool, credential, tokenHash);
      // Consumed by a concurrent reset, or expired, between the look and the statement.
      if (row === null) throw tokenRefusal(await findPinResetToken(pool, input.ownerId), tokenHash) ?? tokenError('used');
      return toPinState(row);
    },

    async updateEmail(input) {
      const result = await attempt(input.ownerId, input.currentPinHash);
      if (!result.verified) throw incorrect(result.verification);
      const row = await updateRecoveryEmail(pool, input.ownerId, result.row.credential_version, normalizeEmail(input.email));
      if (row === null) throw changedMeanwhile();
      return toPinState(row);
    },

    async backupKey(input) {
      const messageHash = input.proof === undefined ? null : verifiedKeyOperation('backup', input.publicKey, input.deviceId, input.proof);
      const result = await withTransaction(pool, async (client) => {
        await lockKeyBackups(client, input.publicKey);
        const devices = await listKeyBackups(client, input.publicKey, backupDevicesPerKeyMax + 1);
        const decision = decideBackup({
          devicesWithBackup: devices.length,
          deviceHasBackup: devices.some((device) => device.device_id === input.deviceId),
          signed: messageHash !== null,
        });
        if (decision.action === 'refuse') {
          throw decision.reason === 'signature_required'
            ? new DomainError('KEY_BACKUP_SIGNATURE_REQUIRED', 'this public key has a backup: overwriting or adding one needs device_signature and operation_timestamp')
            : new DomainError('KEY_BACKUP_DEVICES_EXCEEDED', `this public key has backups from ${backupDevicesPerKeyMax} devices, the most kept`);
        }
        if (messageHash !== null && input.proof !== undefined) {
          await recordOnce(client, 'backup', input.publicKey, input.deviceId, messageHash, input.proof);
        }
        const row = await upsertKeyBackup(client, { publicKey: input.publicKey, deviceId: input.deviceId, encryptedSeed: input.encryptedSeed });
        return { created: decision.action === 'create', backup: toBackupRecord(row) };
      });
      if (messageHash !== null) pruneNowAndThen();
      return result;
    },

    async recoverKey(input) {
      const messageHash = verifiedKeyOperation('recover', input.publicKey, input.deviceId, input.proof);
      const backup = await withTransaction(pool, async (client) => {
        const row = await findKeyBackup(client, input.publicKey, input.deviceId);
        if (row === null) throw new DomainError('KEY_BACKUP_NOT_FOUND', 'no backup of this public key from this device');
        await recordOnce(client, 'recover', input.publicKey, input.deviceId, messageHash, input.proof);
        return toBackupRecord(row);
      });
      pruneNowAndThen();
      return backup;
    },

    async checkKey(publicKey) {
      const devices = await listKeyBackups(pool, publicKey, backupDevicesPerKeyMax);
      return { devices: devices.map((device) => ({ deviceId: device.device_id, backedUpAt: device.updated_at })) };
    },
  };
}
