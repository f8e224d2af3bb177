import { z } from 'zod';
import { hexToBytes } from '../../src/protocol/bytes.ts';
import { deviceIdPattern } from '../../src/protocol/constants.ts';
import { isValidPublicKey } from '../../src/protocol/keys.ts';
import { encryptedSeedBytesMax, encryptedSeedBytesMin } from '../../src/security/key-backup.ts';
import { clientSaltPattern, emailCharsMax, pinAttemptsMax, pinHashPattern } from '../../src/security/pin.ts';
import { ownerIdSchema } from './money.ts';

/** Schemas of the spec's "Security (PIN and keys)" operations; field choices in docs/security.md. */

export const pinHashSchema = z.string().regex(pinHashPattern, "expected 64 lowercase hex digits (the client's 32-byte hash of the PIN)");
export const clientSaltSchema = z.string().regex(clientSaltPattern, 'expected 32 to 128 lowercase hex digits (a 16- to 64-byte salt)');
export const emailSchema = z.email('expected an e-mail address').max(emailCharsMax);

export const keyPublicKeySchema = z
  .string()
  .regex(/^[0-9a-f]{64}$/, 'expected 64 lowercase hex digits (Ed25519 public key)')
  // Judged only once the text is 64 hex digits (zod runs refinements after a failed regex too).
  .refine((hex) => !/^[0-9a-f]{64}$/.test(hex) || isValidPublicKey(hexToBytes(hex, 32)), 'not a valid Ed25519 public key (non-canonical, of small order, or with a torsion component)');
export const keyDeviceIdSchema = z
  .string()
  .regex(deviceIdPattern, 'device_id: 1 to 128 characters of A-Z a-z 0-9 . _ - (no ":", which separates the signed fields)');
export const signatureSchema = z.string().regex(/^[0-9a-f]{128}$/, 'expected 128 lowercase hex digits (Ed25519 signature)');
export const operationTimestampSchema = z
  .number()
  .int()
  .min(0)
  .max(Number.MAX_SAFE_INTEGER)
  .describe('milliseconds since the Unix epoch, as signed');
export const encryptedSeedSchema = z
  .string()
  .regex(/^(?:[0-9a-f]{2})+$/, 'expected lowercase hex of whole bytes')
  .min(encryptedSeedBytesMin * 2, `at least ${encryptedSeedBytesMin} bytes`)
  .max(encryptedSeedBytesMax * 2, `at most ${encryptedSeedBytesMax} bytes`)
  .describe(`the seed as encrypted on the device, opaque to the server: ${encryptedSeedBytesMin} to ${encryptedSeedBytesMax} bytes in hex`);

const ownerIdField = { owner_id: ownerIdSchema.describe('the wallet owner the PIN belongs to (the owner_id of the balance routes)') };

export const registerPinRequest = z
  .strictObject({
    ...ownerIdField,
    pin_hash: pinHashSchema,
    salt: clientSaltSchema.describe('the salt the client hashed the PIN with; returned by status'),
    email: emailSchema.optional().describe('recovery e-mail for PIN resets'),
    current_pin_hash: pinHashSchema.optional().describe('required to overwrite a registered PIN; counts as a verification attempt'),
  })
  .describe('RegisterPinRequest');

export const registerPinResponse = z
  .object({
    owner_id: z.string(),
    registered: z.literal(true),
    created: z.boolean().describe('true for a first registration, false when the PIN or e-mail was changed'),
    recovery_email_set: z.boolean(),
    registered_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'RegisterPinResponse' });

export const verifyPinRequest = z.strictObject({ ...ownerIdField, pin_hash: pinHashSchema }).describe('VerifyPinRequest');

export const verifyPinResponse = z
  .object({
    owner_id: z.string(),
    valid: z.boolean(),
    attempts_remaining: z.number().int().min(0).max(pinAttemptsMax),
    locked_until: z.string().nullable().describe('set when this failure started a lock'),
  })
  .meta({ id: 'VerifyPinResponse' });

export const pinStatusRequest = z.strictObject({ ...ownerIdField }).describe('CheckPinStatusRequest');

export const pinStatusResponse = z
  .object({
    owner_id: z.string(),
    registered: z.boolean(),
    salt: z.string().nullable().describe("the client's salt, so that a second device derives the same hash"),
    recovery_email_set: z.boolean(),
    locked: z.boolean(),
    locked_until: z.string().nullable(),
    attempts_remaining: z.number().int().min(0).max(pinAttemptsMax),
  })
  .meta({ id: 'PinStatusResponse' });

export const requestResetRequest = z.strictObject({ ...ownerIdField, email: emailSchema }).describe('RequestResetRequest');

export const requestResetResponse = z
  .object({
    accepted: z.literal(true),
    message: z.string(),
    expires_in_s: z.number().int().describe('how long a code sent now stays valid'),
  })
  .meta({ id: 'RequestResetResponse' });

export const resetPinRequest = z
  .strictObject({
    ...ownerIdField,
    token: z.string().max(256).describe('the reset code from the e-mail'),
    pin_hash: pinHashSchema,
    salt: clientSaltSchema,
  })
  .describe('ResetPinRequest');

export const updateEmailRequest = z
  .strictObject({ ...ownerIdField, current_pin_hash: pinHashSchema, email: emailSchema })
  .describe('UpdateEmailRequest');

export const keyBackupRequest = z
  .strictObject({
    public_key: keyPublicKeySchema.describe('the key the backup is filed under; recovery is signed by it'),
    device_id: keyDeviceIdSchema,
    encrypted_seed: encryptedSeedSchema,
    device_signature: signatureSchema.optional().describe('required unless this is the first backup of public_key'),
    operation_timestamp: operationTimestampSchema.optional(),
  })
  .refine((body) => (body.device_signature === undefined) === (body.operation_timestamp === undefined), {
    message: 'send device_signature and operation_timestamp together, or neither (first backup only)',
    path: ['device_signature'],
  })
  .describe('KeyBackupRequest');

export const keyBackupResponse = z
  .object({
    public_key: z.string(),
    device_id: z.string(),
    created: z.boolean().describe("false when this device's backup was overwritten"),
    backed_up_at: z.string(),
  })
  .meta({ id: 'KeyBackupResponse' });

export const keyRecoverRequest = z
  .strictObject({
    public_key: keyPublicKeySchema,
    device_id: keyDeviceIdSchema.describe('the device whose backup is asked for (GET key/check lists them)'),
    device_signature: signatureSchema,
    operation_timestamp: operationTimestampSchema,
  })
  .describe('KeyRecoverRequest');

export const keyRecoverResponse = z
  .object({
    public_key: z.string(),
    device_id: z.string(),
    encrypted_seed: z.string(),
    backed_up_at: z.string(),
  })
  .meta({ id: 'KeyRecoverResponse' });

export const keyCheckParams = z.object({ public_key: z.string().regex(/^[0-9a-f]{64}$/, 'expected 64 lowercase hex digits (Ed25519 public key)') });

export const keyCheckResponse = z
  .object({
    public_key: z.string(),
    has_backup: z.boolean(),
    devices: z
      .array(z.object({ device_id: z.string(), backed_up_at: z.string() }))
      .describe('devices holding a backup of this key, newest first (16 at most)'),
  })
  .meta({ id: 'KeyCheckResponse' });
