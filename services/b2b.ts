import { randomBytes, randomUUID } from 'node:crypto';
import {
  getApiCredential,
  getB2bCustomer,
  insertApiCredential,
  insertB2bCustomer,
  listApiCredentials,
  recordB2bStatusChange,
  retireApiCredential,
  revokeApiCredential,
  type ApiCredentialRow,
  type B2bCustomerRow,
} from '../db/b2b.ts';
import { withTransaction, type Pool, type Queryable } from '../db/pool.ts';
import { nextB2bStatus, type B2bAdminAction, type B2bCustomerStatus } from '../src/b2b/customer-status.ts';
import { normalizeCnpj } from '../src/b2b/cnpj.ts';
import { b2bPlans, type B2bPlanId } from '../src/b2b/plans.ts';
import { signingKeyOf } from '../src/b2b/request-signing.ts';
import { DomainError } from '../src/errors.ts';
import { pixKeyRefusal, pixKeyType } from '../src/settlement/pix-key.ts';

/**
 * Business customers (docs/b2b.md): sign-up, the admin's decisions, and their API credentials.
 * Every state change and its record are one transaction under the customer's row lock, so two
 * admins deciding at once are serialized and the loser is refused against the new state.
 */

/** A credential as issued: the secret is in this answer only, never stored. */
export interface IssuedCredential {
  row: ApiCredentialRow;
  secret: string;
}

export interface SignUp {
  legalName: string;
  taxId: string;
  contactEmail: string;
  planId: B2bPlanId;
  pixKey?: string;
}

async function issue(db: Queryable, customerId: string, scopes: readonly string[], createdBy: string): Promise<IssuedCredential> {
  const keyId = `ak_${randomBytes(12).toString('hex')}`;
  const secret = `sk_${randomBytes(32).toString('base64url')}`;
  const row = await insertApiCredential(db, { keyId, customerId, signingKey: signingKeyOf(secret), scopes, createdBy });
  return { row, secret };
}

function checkScopes(customer: B2bCustomerRow, scopes: readonly string[] | undefined): readonly string[] {
  const allowed = b2bPlans[customer.plan_id].scopes;
  if (scopes === undefined) return allowed;
  const outside = scopes.filter((scope) => !allowed.includes(scope));
  if (outside.length > 0) {
    throw new DomainError('API_SCOPE_NOT_IN_PLAN', `the ${customer.plan_id} plan does not give ${outside.join(', ')}`, { field: 'scopes', allowed });
  }
  return [...new Set(scopes)];
}

export function createB2bService(pool: Pool) {
  return {
    async signUp(input: SignUp): Promise<B2bCustomerRow> {
      const taxId = normalizeCnpj(input.taxId);
      if (taxId === null) throw new DomainError('TAX_ID_INVALID', 'tax_id is not a valid CNPJ (14 digits with both check digits right)', { field: 'tax_id' });
      const pixKey = input.pixKey ?? taxId;
      if (pixKeyType(pixKey) === null) {
        throw new DomainError('UNSUPPORTED_RAIL', `pix_key is not a valid Pix key: ${pixKeyRefusal(pixKey)}`, { field: 'pix_key' });
      }
      const row = await insertB2bCustomer(pool, {
        id: randomUUID(),
        legalName: input.legalName,
        taxId,
        contactEmail: input.contactEmail.toLowerCase(),
        planId: input.planId,
        pixKey,
      });
      if (row === null) throw new DomainError('B2B_CUSTOMER_EXISTS', 'a business with this CNPJ has signed up already');
      return row;
    },

    /**
     * Approve, suspend or block, recorded with its reason and actor. The first approval issues
     * the customer's first credential (all its plan's scopes); a block revokes every credential.
     */
    async decide(customerId: string, action: B2bAdminAction, reason: string, actor: string) {
      return withTransaction(pool, async (client) => {
        const customer = await getB2bCustomer(client, customerId, { forUpdate: true });
        if (customer === null) throw new DomainError('B2B_CUSTOMER_NOT_FOUND', 'no such business customer');
        const from: B2bCustomerStatus = customer.status;
        const to = nextB2bStatus(from, action);
        if (to === null) {
          throw new DomainError('B2B_TRANSITION_INVALID', `a ${from} customer cannot be ${action === 'approve' ? 'approved' : action === 'suspend' ? 'suspended' : 'blocked'}`, {
            status: from,
            action,
          });
        }
        const updated = await recordB2bStatusChange(client, { customerId, from, to, reason, actor });
        let credential: IssuedCredential | null = null;
        if (action === 'approve' && from === 'PENDING_REVIEW') {
          credential = await issue(client, customerId, b2bPlans[customer.plan_id].scopes, actor);
        }
        if (to === 'BLOCKED') {
          for (const row of await listApiCredentials(client, customerId)) await revokeApiCredential(client, row.key_id, `customer blocked: ${reason}`.slice(0, 500));
        }
        return { customer: updated, from, credential };
      });
    },

    /** A further credential for an ACTIVE customer, with some or all of its plan's scopes. */
    async issueCredential(customerId: string, scopes: readonly string[] | undefined, actor: string): Promise<IssuedCredential> {
      return withTransaction(pool, async (client) => {
        const customer = await getB2bCustomer(client, customerId, { forUpdate: true });
        if (customer === null) throw new DomainError('B2B_CUSTOMER_NOT_FOUND', 'no such business customer');
        if (customer.status !== 'ACTIVE') {
          throw new DomainError('B2B_CUSTOMER_NOT_ACTIVE', `a ${customer.status} customer gets no credential`, { status: customer.status });
        }
        return issue(client, customerId, checkScopes(customer, scopes), actor);
      });
    },

    /**
     * A new secret for the same scopes: the old credential keeps working for `graceSeconds`
     * (so terminals can be updated one by one), then expires. A credential is rotated once.
     */
    async rotate(keyId: string, graceSeconds: number, actor: string) {
      return withTransaction(pool, async (client) => {
        const old = await getApiCredential(client, keyId, { forUpdate: true });
        if (old === null) throw new DomainError('API_KEY_NOT_FOUND', 'no such API credential');
        if (old.replaced_by !== null) throw new DomainError('API_KEY_ALREADY_ROTATED', 'this credential was rotated already', { replaced_by: old.replaced_by });
        const issued = await issue(client, old.customer_id, old.scopes, actor);
        const previous = await retireApiCredential(client, keyId, issued.row.key_id, graceSeconds);
        return { issued, previous };
      });
    },

    async revoke(keyId: string, reason: string): Promise<ApiCredentialRow> {
      const row = await revokeApiCredential(pool, keyId, reason);
      if (row === null) throw new DomainError('API_KEY_NOT_FOUND', 'no such API credential');
      return row;
    },
  };
}
export type B2bService = ReturnType<typeof createB2bService>;
