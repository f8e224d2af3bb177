import { describe, expect, it } from 'vitest';
import { backupDevicesPerKeyMax, decideBackup } from '../../src/security/key-backup.ts';
import { emailLineCharsMax, pinResetCodeIn, renderPinResetEmail } from '../../src/security/pin-reset-email.ts';
import { attemptsRemaining, clientSaltPattern, lockoutDurationMs, lockoutScheduleMs, normalizeEmail, pinHashPattern, resetTokenPattern } from '../../src/security/pin.ts';

const minute = 60_000;

describe('lockout schedule', () => {
  it('doubles from the base up to the cap, and every later lockout lasts the cap', () => {
    const schedule = lockoutScheduleMs(15 * minute, 24 * 60 * minute);
    expect(schedule.map((ms) => ms / minute)).toEqual([15, 30, 60, 120, 240, 480, 960, 1440]);
    expect(lockoutDurationMs(0, schedule)).toBe(15 * minute);
    expect(lockoutDurationMs(3, schedule)).toBe(120 * minute);
    expect(lockoutDurationMs(50, schedule)).toBe(1440 * minute);
    expect(lockoutScheduleMs(1000, 1000)).toEqual([1000]);
    expect(() => lockoutScheduleMs(0, 1000)).toThrow(RangeError);
    expect(() => lockoutScheduleMs(2000, 1000)).toThrow(RangeError);
  });

  it.each([
    [0, false, 5],
    [1, false, 4],
    [4, false, 1],
    [5, true, 0],
    [5, false, 5],
  ])('%i failures, locked %s: %i attempts remain', (failures, locked, remaining) => {
    expect(attemptsRemaining(failures, locked)).toBe(remaining);
  });
});

describe('key backup decisions', () => {
  it.each([
    [{ devicesWithBackup: 0, deviceHasBackup: false, signed: false }, { action: 'create' }],
    [{ devicesWithBackup: 1, deviceHasBackup: true, signed: false }, { action: 'refuse', reason: 'signature_required' }],
    [{ devicesWithBackup: 1, deviceHasBackup: false, signed: false }, { action: 'refuse', reason: 'signature_required' }],
    [{ devicesWithBackup: 0, deviceHasBackup: false, signed: true }, { action: 'create' }],
    [{ devicesWithBackup: 3, deviceHasBackup: true, signed: true }, { action: 'overwrite' }],
    [{ devicesWithBackup: 3, deviceHasBackup: false, signed: true }, { action: 'create' }],
    [{ devicesWithBackup: backupDevicesPerKeyMax, deviceHasBackup: false, signed: true }, { action: 'refuse', reason: 'too_many_devices' }],
    [{ devicesWithBackup: backupDevicesPerKeyMax, deviceHasBackup: true, signed: true }, { action: 'overwrite' }],
  ])('%j -> %j', (input, decision) => {
    expect(decideBackup(input)).toEqual(decision);
  });
});

describe('PIN formats and the reset e-mail', () => {
  it('accepts only lowercase hex of the right lengths', () => {
    expect(pinHashPattern.test('ab'.repeat(32))).toBe(true);
    expect(pinHashPattern.test('AB'.repeat(32))).toBe(false);
    expect(clientSaltPattern.test('ab'.repeat(16))).toBe(true);
    expect(clientSaltPattern.test('ab'.repeat(64))).toBe(true);
    expect(clientSaltPattern.test('ab'.repeat(65))).toBe(false);
    expect(clientSaltPattern.test('a'.repeat(33))).toBe(false);
    expect(normalizeEmail('  Bob@Example.COM ')).toBe('bob@example.com');
  });

  it('puts the code on a line of its own that reads back exactly, every line under 76 characters', () => {
    const token = 'gH6DW4SU8rFRwWkNx7M4AIHfIanISwBy5EvcZs_mOQA';
    expect(resetTokenPattern.test(token)).toBe(true);
    const mail = renderPinResetEmail({ ownerId: 'f'.repeat(128), token, expiresAt: new Date('2026-11-24T17:15:06.355Z') });
    expect(pinResetCodeIn(mail.text)).toBe(token);
    for (const line of mail.text.split('\r\n')) expect(line.length).toBeLessThanOrEqual(emailLineCharsMax);
    expect(mail.text).toContain('ffffffff...ffffffff');
    expect(mail.text).toMatch(/^[\x20-\x7e\r\n]*$/);
    expect(pinResetCodeIn('Reset code: too-short')).toBeNull();
  });
});
