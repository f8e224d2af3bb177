import { getIssueReceipt, keepIssueReceipt } from '../db/issue-receipts.ts';
import type { Pool } from '../db/pool.ts';
import { bytesToHex, signIssueReceipt, timestampMsMax, type KeyPair, type PlcCommitment, type ReceiptKey } from '../src/protocol/index.ts';

/**
 * The service's issue receipts (docs/protocol.md section 19): signed once a create has reserved
 * the PLC's amount, with the key that signs the blocklist, kept (the first one for a PLC), and
 * handed out with the PLC wherever the service returns it.
 */
export function createIssueReceipts(deps: { pool: Pool; signingKey: KeyPair; nowMs?: () => number }) {
  const nowMs = deps.nowMs ?? Date.now;
  const servicePubkey = bytesToHex(deps.signingKey.publicKey);
  return {
    servicePubkey,
    /**
     * The receipt of a PLC the service has registered (its create booked the reservation): the
     * one kept, or a new one signed now and kept. Call only after the registration succeeded.
     */
    async forRegistered(commitment: PlcCommitment): Promise<string> {
      const issuedAtMs = nowMs();
      const receipt = bytesToHex(signIssueReceipt({ commitment, serviceSecretKey: deps.signingKey.secretKey, issuedAtMs }));
      return keepIssueReceipt(deps.pool, { tokenId: commitment.tokenId, receipt, servicePubkey, issuedAt: new Date(issuedAtMs) });
    },
    /** The receipt kept for a PLC, or null. */
    kept(tokenId: string): Promise<string | null> {
      return getIssueReceipt(deps.pool, tokenId);
    },
  };
}

export type IssueReceipts = ReturnType<typeof createIssueReceipts>;

/**
 * The receipt keys the signed blocklist publishes (format v2): the key that signs receipts now,
 * trusted for any issue time. A rotation adds the retired key with the period it signed in; a
 * revocation leaves a key out (docs/protocol.md 19.4).
 */
export function publishedReceiptKeys(signingKey: KeyPair): ReceiptKey[] {
  return [{ publicKey: signingKey.publicKey, validFromMs: 0, validUntilMs: timestampMsMax }];
}
