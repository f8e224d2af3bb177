import { z } from 'zod';
import { b2bPlanIds } from '../src/b2b/plans.ts';
import { b2bCustomerStatuses, type B2bCustomerStatus } from '../src/b2b/customer-status.ts';
import type { Queryable } from './pool.ts';
import { exec, many, maybeOne, one } from './sql.ts';

/**
 * Business customers (docs/b2b.md): their rows and state changes, their API credentials, the
 * nonces of their signed requests, and their POS batch syncs (migration 29_b2b).
 */

export const b2bCustomerRow = z.object({
  id: z.string().uuid(),
  legal_name: z.string(),
  tax_id: z.string(),
  contact_email: z.string(),
  plan_id: z.enum(b2bPlanIds),
  pix_key: z.string(),
  status: z.enum(b2bCustomerStatuses),
  created_at: z.date(),
  updated_at: z.date(),
});
export type B2bCustomerRow = z.infer<typeof b2bCustomerRow>;

export const b2bCustomerEventRow = z.object({
  id: z.coerce.number(),
  from_status: z.enum(b2bCustomerStatuses).nullable(),
  to_status: z.enum(b2bCustomerStatuses),
  reason: z.string(),
  actor: z.string(),
  at: z.date(),
});
export type B2bCustomerEventRow = z.infer<typeof b2bCustomerEventRow>;

const customerColumns = 'id, legal_name, tax_id, contact_email, plan_id, pix_key, status, created_at, updated_at';

export interface NewB2bCustomer {
  id: string;
  legalName: string;
  taxId: string;
  contactEmail: string;
  planId: string;
  pixKey: string;
}

/** Inserts a sign-up (PENDING_REVIEW) with its first event; null when the CNPJ has signed up already. */
export async function insertB2bCustomer(db: Queryable, customer: NewB2bCustomer): Promise<B2bCustomerRow | null> {
  return maybeOne(db, b2bCustomerRow, {
    name: 'b2b_customer_insert',
    text: `WITH inserted AS (
             INSERT INTO b2b_customers (id, legal_name, tax_id, contact_email, plan_id, pix_key)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (tax_id) DO NOTHING
             RETURNING ${customerColumns}
           ), event AS (
             INSERT INTO b2b_customer_events (customer_id, from_status, to_status, reason, actor)
             SELECT id, NULL, status, 'sign-up', 'sign-up' FROM inserted
           )
           SELECT ${customerColumns} FROM inserted`,
    values: [customer.id, customer.legalName, customer.taxId, customer.contactEmail, customer.planId, customer.pixKey],
  });
}

export function getB2bCustomer(db: Queryable, id: string, options: { forUpdate?: boolean } = {}): Promise<B2bCustomerRow | null> {
  return maybeOne(db, b2bCustomerRow, {
    name: options.forUpdate === true ? 'b2b_customer_get_for_update' : 'b2b_customer_get',
    text: `SELECT ${customerColumns} FROM b2b_customers WHERE id = $1${options.forUpdate === true ? ' FOR UPDATE' : ''}`,
    values: [id],
  });
}

export function listB2bCustomers(
  db: Queryable,
  filter: { status?: B2bCustomerStatus },
  page: { limit: number; offset: number },
): Promise<B2bCustomerRow[]> {
  return many(db, b2bCustomerRow, {
    name: 'b2b_customer_list',
    text: `SELECT ${customerColumns} FROM b2b_customers
            WHERE ($1::text IS NULL OR status = $1)
            ORDER BY created_at DESC, id
            LIMIT $2 OFFSET $3`,
    values: [filter.status ?? null, page.limit, page.offset],
  });
}

/** Changes the status and records the change, in the caller's transaction (the row locked by it). */
export async function recordB2bStatusChange(
  db: Queryable,
  change: { customerId: string; from: B2bCustomerStatus; to: B2bCustomerStatus; reason: string; actor: string },
): Promise<B2bCustomerRow> {
  return one(db, b2bCustomerRow, {
    name: 'b2b_customer_status_change',
    text: `WITH event AS (
             INSERT INTO b2b_customer_events (customer_id, from_status, to_status, reason, actor)
             VALUES ($1, $2, $3, $4, $5)
           )
           UPDATE b2b_customers SET status = $3, updated_at = now()
            WHERE id = $1 AND status = $2
           RETURNING ${customerColumns}`,
    values: [change.customerId, change.from, change.to, change.reason, change.actor],
  });
}

/** A customer's state changes, oldest first (at most 200, the newest ones). */
export function listB2bCustomerEvents(db: Queryable, customerId: string): Promise<B2bCustomerEventRow[]> {
  return many(db, b2bCustomerEventRow, {
    name: 'b2b_customer_events',
    text: `SELECT * FROM (
             SELECT id, from_status, to_status, reason, actor, at FROM b2b_customer_events
              WHERE customer_id = $1 ORDER BY id DESC LIMIT 200
           ) newest ORDER BY id`,
    values: [customerId],
  });
}

// Credentials

export const apiCredentialRow = z.object({
  key_id: z.string(),
  customer_id: z.string().uuid(),
  scopes: z.array(z.string()),
  created_by: z.string(),
  created_at: z.date(),
  expires_at: z.date().nullable(),
  revoked_at: z.date().nullable(),
  revoke_reason: z.string().nullable(),
  replaced_by: z.string().nullable(),
});
export type ApiCredentialRow = z.infer<typeof apiCredentialRow>;

const credentialColumns = 'key_id, customer_id, scopes, created_by, created_at, expires_at, revoked_at, revoke_reason, replaced_by';

/** What the signature check reads: the credential, its signing key, and its customer's status and plan. */
export const credentialForCheckRow = apiCredentialRow.extend({
  signing_key: z.instanceof(Buffer),
  customer_status: z.enum(b2bCustomerStatuses),
  plan_id: z.enum(b2bPlanIds),
  pix_key: z.string(),
  now: z.date(),
});
export type CredentialForCheck = z.infer<typeof credentialForCheckRow>;

export function getCredentialForCheck(db: Queryable, keyId: string): Promise<CredentialForCheck | null> {
  return maybeOne(db, credentialForCheckRow, {
    name: 'api_credential_for_check',
    text: `SELECT c.key_id, c.customer_id, c.scopes, c.created_by, c.created_at, c.expires_at, c.revoked_at, c.revoke_reason,
                  c.replaced_by, c.signing_key, b.status AS customer_status, b.plan_id, b.pix_key, now() AS now
             FROM api_credentials c JOIN b2b_customers b ON b.id = c.customer_id
            WHERE c.key_id = $1`,
    values: [keyId],
    prepare: true,
  });
}

export interface NewApiCredential {
  keyId: string;
  customerId: string;
  signingKey: Uint8Array;
  scopes: readonly string[];
  createdBy: string;
}

export function insertApiCredential(db: Queryable, credential: NewApiCredential): Promise<ApiCredentialRow> {
  return one(db, apiCredentialRow, {
    name: 'api_credential_insert',
    text: `INSERT INTO api_credentials (key_id, customer_id, signing_key, scopes, created_by)
           VALUES ($1, $2, $3, $4, $5)
           RETURNING ${credentialColumns}`,
    values: [credential.keyId, credential.customerId, Buffer.from(credential.signingKey), [...credential.scopes], credential.createdBy],
  });
}

export function getApiCredential(db: Queryable, keyId: string, options: { forUpdate?: boolean } = {}): Promise<ApiCredentialRow | null> {
  return maybeOne(db, apiCredentialRow, {
    name: options.forUpdate === true ? 'api_credential_get_for_update' : 'api_credential_get',
    text: `SELECT ${credentialColumns} FROM api_credentials WHERE key_id = $1${options.forUpdate === true ? ' FOR UPDATE' : ''}`,
    values: [keyId],
  });
}

/** A customer's credentials, newest first (at most 100). */
export function listApiCredentials(db: Queryable, customerId: string): Promise<ApiCredentialRow[]> {
  return many(db, apiCredentialRow, {
    name: 'api_credential_list',
    text: `SELECT ${credentialColumns} FROM api_credentials WHERE customer_id = $1 ORDER BY created_at DESC, key_id LIMIT 100`,
    values: [customerId],
  });
}

/** Ends a rotated credential's life after the grace period and links it to its successor. */
export function retireApiCredential(db: Queryable, keyId: string, replacedBy: string, graceSeconds: number): Promise<ApiCredentialRow> {
  return one(db, apiCredentialRow, {
    name: 'api_credential_retire',
    text: `UPDATE api_credentials
              SET replaced_by = $2,
                  expires_at = LEAST(COALESCE(expires_at, 'infinity'::timestamptz), now() + make_interval(secs => $3))
            WHERE key_id = $1
           RETURNING ${credentialColumns}`,
    values: [keyId, replacedBy, graceSeconds],
  });
}

/** Revokes a credential at once; a credential revoked before keeps its first revocation. */
export function revokeApiCredential(db: Queryable, keyId: string, reason: string): Promise<ApiCredentialRow | null> {
  return maybeOne(db, apiCredentialRow, {
    name: 'api_credential_revoke',
    text: `UPDATE api_credentials
              SET revoked_at = COALESCE(revoked_at, now()), revoke_reason = COALESCE(revoke_reason, $2)
            WHERE key_id = $1
           RETURNING ${credentialColumns}`,
    values: [keyId, reason],
  });
}

/** How many expired nonces one request prunes at most. */
const noncePruneBatch = 50;

/**
 * Claims a nonce for a key until `ttlSeconds` from now; false when it was claimed before (a
 * replay). The primary key decides a race: of two requests with one nonce, one inserts. Prunes
 * a bounded batch of expired nonces on the way (rows another request is pruning are skipped).
 */
export async function claimNonce(db: Queryable, keyId: string, nonce: string, ttlSeconds: number): Promise<boolean> {
  const row = await one(db, z.object({ claimed: z.boolean() }), {
    name: 'api_nonce_claim',
    text: `WITH pruned AS (
             DELETE FROM api_nonces WHERE ctid IN (
               SELECT ctid FROM api_nonces WHERE expires_at < now() LIMIT ${noncePruneBatch} FOR UPDATE SKIP LOCKED
             )
           ), claimed AS (
             INSERT INTO api_nonces (key_id, nonce, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
             ON CONFLICT (key_id, nonce) DO NOTHING
             RETURNING 1
           )
           SELECT EXISTS (SELECT 1 FROM claimed) AS claimed`,
    values: [keyId, nonce, ttlSeconds],
    prepare: true,
  });
  return row.claimed;
}

// POS batches

export const posBatchRow = z.object({
  customer_id: z.string().uuid(),
  batch_id: z.string(),
  body_hash: z.instanceof(Buffer),
  key_id: z.string(),
  item_count: z.number().int(),
  status: z.enum(['IN_PROGRESS', 'DONE']),
  result: z.unknown().nullable(),
  created_at: z.date(),
  finished_at: z.date().nullable(),
});
export type PosBatchRow = z.infer<typeof posBatchRow>;

/**
 * Claims a batch id for this body: `claimed` when this call is to run the items (a new batch,
 * or one whose earlier run died and was left IN_PROGRESS longer than `staleSeconds` with the
 * same body); otherwise the stored row, for the caller to answer from or refuse.
 */
export async function claimPosBatch(
  db: Queryable,
  batch: { customerId: string; batchId: string; bodyHash: Uint8Array; keyId: string; itemCount: number; staleSeconds: number },
): Promise<{ claimed: true } | { claimed: false; row: PosBatchRow }> {
  const values = [batch.customerId, batch.batchId, Buffer.from(batch.bodyHash), batch.keyId, batch.itemCount];
  const inserted = await exec(db, {
    name: 'pos_batch_claim',
    text: `INSERT INTO pos_batches (customer_id, batch_id, body_hash, key_id, item_count, status)
           VALUES ($1, $2, $3, $4, $5, 'IN_PROGRESS')
           ON CONFLICT (customer_id, batch_id) DO NOTHING`,
    values,
  });
  if (inserted === 1) return { claimed: true };
  const reclaimed = await exec(db, {
    name: 'pos_batch_reclaim',
    text: `UPDATE pos_batches SET created_at = now(), key_id = $3
            WHERE customer_id = $1 AND batch_id = $2 AND body_hash = $4 AND status = 'IN_PROGRESS'
              AND created_at < now() - make_interval(secs => $5)`,
    values: [batch.customerId, batch.batchId, batch.keyId, Buffer.from(batch.bodyHash), batch.staleSeconds],
  });
  if (reclaimed === 1) return { claimed: true };
  const row = await maybeOne(db, posBatchRow, {
    name: 'pos_batch_get',
    text: `SELECT customer_id, batch_id, body_hash, key_id, item_count, status, result, created_at, finished_at
             FROM pos_batches WHERE customer_id = $1 AND batch_id = $2`,
    values: [batch.customerId, batch.batchId],
  });
  if (row === null) throw new Error(`pos batch ${batch.batchId} vanished while being claimed`);
  return { claimed: false, row };
}

/** Stores a batch's answer (DONE). */
export async function finishPosBatch(db: Queryable, customerId: string, batchId: string, result: unknown): Promise<void> {
  await exec(db, {
    name: 'pos_batch_finish',
    text: `UPDATE pos_batches SET status = 'DONE', result = $3, finished_at = now() WHERE customer_id = $1 AND batch_id = $2`,
    values: [customerId, batchId, JSON.stringify(result)],
  });
}

/** Lets the batch id be tried again (its run failed as a whole, before any item was decided). */
export async function releasePosBatch(db: Queryable, customerId: string, batchId: string): Promise<void> {
  await exec(db, {
    name: 'pos_batch_release',
    text: `DELETE FROM pos_batches WHERE customer_id = $1 AND batch_id = $2 AND status = 'IN_PROGRESS'`,
    values: [customerId, batchId],
  });
}
