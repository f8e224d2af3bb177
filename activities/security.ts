import { createHash, randomBytes } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { Pool } from '../db/pool.ts';
import { issuePinResetToken } from '../db/security-pins.ts';
import type { Config } from '../infra/config.ts';
import { createMailer, type Mailer } from '../infra/mailer.ts';
import { renderPinResetEmail } from '../src/security/pin-reset-email.ts';
import { resetTokenBytes } from '../src/security/pin.ts';

/**
 * The PIN reset e-mail (workflow `pin-reset-email-<request_id>`, docs/security.md). The token is
 * made here, inside the activity: only its SHA-256 is written to the database, and the token
 * itself leaves this function in the e-mail alone (never in the workflow's history, never in a
 * log line). A retry after a failed send makes a new token, which replaces the unsent one.
 */

export interface PinResetEmailInput {
  readonly requestId: string;
  readonly ownerId: string;
  /** SHA-256 (hex) of the e-mail address the request named, normalised: the address stays out of the history. */
  readonly emailSha256: string;
}

export interface PinResetEmailResult {
  readonly status: 'SENT' | 'NO_MATCH';
}

export interface PinResetMailDeps {
  readonly mailer: Mailer;
  readonly tokenTtlMs: number;
}

/** The worker's mail dependencies from its configuration; null without SMTP_URL. */
export function pinResetMailFromConfig(config: Pick<Config, 'SMTP_URL' | 'SMTP_FROM' | 'PIN_RESET_TOKEN_TTL_MS'>): PinResetMailDeps | null {
  if (config.SMTP_URL === undefined) return null;
  return { mailer: createMailer({ smtpUrl: config.SMTP_URL, from: config.SMTP_FROM }), tokenTtlMs: config.PIN_RESET_TOKEN_TTL_MS };
}

export function createSecurityActivities(deps: { pool: Pool; mail?: PinResetMailDeps | null | undefined }) {
  return {
    async sendPinResetEmail(input: PinResetEmailInput): Promise<PinResetEmailResult> {
      const mail = deps.mail ?? null;
      if (mail === null) {
        throw ApplicationFailure.nonRetryable('this worker has no SMTP_URL: it cannot send the PIN reset e-mail', 'PIN_RESET_EMAIL_UNAVAILABLE');
      }
      const token = randomBytes(resetTokenBytes).toString('base64url');
      const issued = await issuePinResetToken(deps.pool, {
        ownerId: input.ownerId,
        emailSha256: Buffer.from(input.emailSha256, 'hex'),
        tokenHash: createHash('sha256').update(token).digest(),
        requestId: input.requestId,
        ttlMs: mail.tokenTtlMs,
      });
      if (issued === null) return { status: 'NO_MATCH' };
      const message = renderPinResetEmail({ ownerId: input.ownerId, token, expiresAt: issued.expires_at });
      await mail.mailer.send({ to: issued.recovery_email, subject: message.subject, text: message.text });
      return { status: 'SENT' };
    },
  };
}

export type SecurityActivities = ReturnType<typeof createSecurityActivities>;
