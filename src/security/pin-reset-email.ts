/**
 * The PIN reset e-mail. Plain ASCII text with lines under 76 characters, so that no transfer
 * encoding touches it: whoever reads the message (a person, or a test over SMTP) finds the code
 * as written.
 */

/** Longest line of the message (RFC 5322 recommends 78; quoted-printable folds above 76). */
export const emailLineCharsMax = 76;

export interface PinResetEmail {
  readonly subject: string;
  readonly text: string;
}

/** The line that carries the code; `pinResetCodeIn` finds it again. */
const codeLabel = 'Reset code: ';

export function renderPinResetEmail(input: { ownerId: string; token: string; expiresAt: Date }): PinResetEmail {
  const wallet = input.ownerId.length > 16 ? `${input.ownerId.slice(0, 8)}...${input.ownerId.slice(-8)}` : input.ownerId;
  return {
    subject: 'Your PIN reset code',
    text: [
      `Someone asked to reset the PIN of wallet ${wallet}.`,
      '',
      `${codeLabel}${input.token}`,
      '',
      'Enter it in the app to choose a new PIN. It works once,',
      `until ${input.expiresAt.toISOString()}; a newer request replaces it.`,
      '',
      'If you did not ask for this, ignore this message: your PIN stays as it is.',
      '',
    ].join('\r\n'),
  };
}

/** The code in a received reset e-mail, or null. */
export function pinResetCodeIn(message: string): string | null {
  const match = /^Reset code: ([A-Za-z0-9_-]{43})\r?$/m.exec(message);
  return match?.[1] ?? null;
}
