/**
 * The key backup's rules (docs/security.md, "Key backup and recovery"): bounds, and what a backup
 * request may do given what the server already holds for its public key. The interface's rule:
 * the first backup of a public key needs no signature (under rate limiting); any other write
 * needs a valid signature by that key.
 */

/** The encrypted seed is opaque; 16 bytes is the least an AEAD ciphertext can be (its tag). */
export const encryptedSeedBytesMin = 16;
/** A sealed 32-byte seed with a device id is under 256 bytes; 1 KiB leaves room for other wallets' formats. */
export const encryptedSeedBytesMax = 1024;
/** Devices holding a backup of one public key at most: the list `check` answers stays bounded. */
export const backupDevicesPerKeyMax = 16;

export type BackupDecision =
  | { readonly action: 'create' }
  | { readonly action: 'overwrite' }
  | { readonly action: 'refuse'; readonly reason: 'signature_required' | 'too_many_devices' };

/**
 * `devicesWithBackup`: how many devices hold a backup of the key now; `deviceHasBackup`: whether
 * this device is one of them; `signed`: whether the request carries a signature that verified.
 * An unsigned write is only ever the very first backup of the key: a second device must not be
 * able to file a backup under someone's key without their signature, or a recovery could be
 * handed a seed the owner never sealed.
 */
export function decideBackup(input: { devicesWithBackup: number; deviceHasBackup: boolean; signed: boolean }): BackupDecision {
  if (!input.signed) return input.devicesWithBackup === 0 ? { action: 'create' } : { action: 'refuse', reason: 'signature_required' };
  if (input.deviceHasBackup) return { action: 'overwrite' };
  if (input.devicesWithBackup >= backupDevicesPerKeyMax) return { action: 'refuse', reason: 'too_many_devices' };
  return { action: 'create' };
}
