import nodemailer from 'nodemailer';

/**
 * Outgoing e-mail over SMTP (nodemailer), for PIN reset codes. Built from SMTP_URL; nodemailer's
 * own logging stays off, so neither a message body (which holds a reset token) nor the SMTP
 * credentials reach a log line. Sends time out instead of hanging an activity.
 */

export interface OutgoingMail {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
}

export interface Mailer {
  send(mail: OutgoingMail): Promise<void>;
  close(): void;
}

export const smtpTimeoutMs = 15_000;

export function createMailer(options: { smtpUrl: string; from: string }): Mailer {
  const transport = nodemailer.createTransport({
    url: options.smtpUrl,
    logger: false,
    debug: false,
    connectionTimeout: smtpTimeoutMs,
    greetingTimeout: smtpTimeoutMs,
    socketTimeout: smtpTimeoutMs,
  });
  return {
    async send(mail) {
      await transport.sendMail({ from: options.from, to: mail.to, subject: mail.subject, text: mail.text, disableFileAccess: true, disableUrlAccess: true });
    },
    close() {
      transport.close();
    },
  };
}
