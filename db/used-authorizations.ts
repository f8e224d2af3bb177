import { z } from 'zod';
import type { Queryable } from './pool.ts';
import { exec, maybeOne } from './sql.ts';

/**
 * The signed authorisations the service has accepted, by hash (migration 19_used_authorizations, docs/protocol.md
 * section 9.4): each is accepted once, whatever the Idempotency-Key it comes with.
 */

export type AuthorizationKind = 'cancel' | 'redeem' | 'backup' | 'recover' | 'limit-increase';

export interface AcceptedAuthorization {
  /** 64 hex: `authorizationHash` of src/protocol (SHA-256 of the signer's key and the signed message). */
  authorizationHash: string;
  kind: AuthorizationKind;
  signerPubkey: string;
  tokenId: string | null;
  /** What it authorised: a redemption id, or a cancellation's (the id derived from its Idempotency-Key, else the PLC's token id). */
  referenceId: string;
  signedAtMs: number;
}

/**
 * Records an authorisation as accepted; false when it was accepted before (the caller refuses it
 * with AUTHORIZATION_REPLAYED). Run it in the transaction that carries out what it authorises, so
 * that it is recorded exactly when that happens; a concurrent insert of the same hash waits for
 * the first transaction and then finds the row.
 */
export async function recordAuthorization(db: Queryable, authorization: AcceptedAuthorization): Promise<boolean> {
  const inserted = await exec(db, {
    name: 'used-authorization-insert',
    text: `INSERT INTO used_authorizations (authorization_hash, kind, signer_pubkey, token_id, reference_id, signed_at_ms)
           VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (authorization_hash) DO NOTHING`,
    values: [
      authorization.authorizationHash,
      authorization.kind,
      authorization.signerPubkey,
      authorization.tokenId,
      authorization.referenceId,
      authorization.signedAtMs,
    ],
  });
  return inserted === 1;
}

/** Forgets a claim whose authorised act was refused (a cancel of a PLC that cannot be cancelled). */
export async function releaseAuthorization(db: Queryable, authorizationHash: string, referenceId: string): Promise<void> {
  await exec(db, {
    name: 'used-authorization-release',
    text: 'DELETE FROM used_authorizations WHERE authorization_hash = $1 AND reference_id = $2',
    values: [authorizationHash, referenceId],
  });
}

/** Whether the authorisation was accepted before (a read; the insert alone decides a race). */
export async function isAuthorizationUsed(db: Queryable, authorizationHash: string): Promise<boolean> {
  const row = await maybeOne(db, z.object({ found: z.literal(1) }), {
    name: 'used-authorization-find',
    text: 'SELECT 1 AS found FROM used_authorizations WHERE authorization_hash = $1',
    values: [authorizationHash],
  });
  return row !== null;
}

/** What an accepted authorisation authorised (its `reference_id`: a redemption id, a cancellation's id); null when it was not accepted. */
export async function authorizationReference(db: Queryable, authorizationHash: string): Promise<string | null> {
  const row = await maybeOne(db, z.object({ reference_id: z.string() }), {
    name: 'used-authorization-reference',
    text: 'SELECT reference_id FROM used_authorizations WHERE authorization_hash = $1',
    values: [authorizationHash],
  });
  return row?.reference_id ?? null;
}
