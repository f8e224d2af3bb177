/**
 * Routes beyond the interface specification (docs/spec/endpoints.txt lists its 95 operations).
 * Every route the app serves under /api/v1 is either one of the spec's operations or matches an
 * entry here; `test/api/openapi.test.ts` fails on any other, so a stray route is caught and each
 * extension carries the reason a user needs it.
 *
 * `operation` is `METHOD /path` with OpenAPI path parameters (`{id}`); a path ending in `/*`
 * covers every operation under that prefix (for a group whose members all share one reason).
 */
export interface RouteExtension {
  readonly operation: string;
  readonly reason: string;
}

export const routeExtensions: readonly RouteExtension[] = [
  {
    operation: 'POST /api/v1/admin/reconcile/gateway-audit',
    reason:
      "the gateway audit: the spec's reconcile tools check our PENDING rows against the gateway, none looks from the gateway's side; " +
      'this one pages through the gateway\'s transfers and payments and joins them with our redemptions, charges and ledger, so a payout ' +
      'or a payment our books do not account for is found (docs/reconciliation.md). Dry by default like the others; a Temporal Schedule runs it periodically',
  },
  {
    operation: 'POST /api/v1/admin/reconcile/compensate-cancelled-bearers',
    reason:
      'the bearer of a PLC its issuer cancelled after signing it over is refused (the interface keeps cancel as it is) and the chain recorded as evidence; ' +
      "this tool lets an operator compensate that bearer from the issuer's AVAILABLE, never below zero, once per evidence, dry run first (docs/plc.md, \"Cancel after transfer\")",
  },
  {
    operation: '* /api/v1/dev/*',
    reason:
      'developer simulation endpoints (named by the spec without paths): drive the gateway simulator, fund an owner, make a PLC expire now, replay a stored webhook, so an integrator can test end to end without a real gateway or device (docs/b2b.md, "Developer endpoints"); never registered in production',
  },
  {
    operation: 'GET /api/v1/redemptions/{redemption_id}',
    reason:
      "the bearer follows its own redemption (status, amounts, the gateway's transfer id once known) without admin rights; the spec only offers the admin list and the gateway transfer's status by a transfer id the bearer never learns. The redemption id (a random UUID v4, or one derived from the redeem's Idempotency-Key and body, given only in the redeem answer, as status_url) is the key",
  },
  {
    operation: 'GET /api/v1/plc/{token_id}/redemptions',
    reason:
      "the bearer finds its redemption by the token id it holds when the redeem answer (the only place the redemption id is given) was lost or timed out (issue 34); the spec lists redemptions for admins only",
  },
  {
    operation: 'GET /api/v1/plc/{token_id}/json',
    reason:
      "the PLC in the protocol's JSON form (docs/protocol.md section 12) with its registered chain, readable without admin rights: a wallet that lost its copy, or a holder checking what the server registered, gets exactly what it verifies and redeems; the spec's status and chain routes each give only part of it",
  },
  {
    operation: 'GET /api/v1/plc/{token_id}/events',
    reason:
      'the spec\'s Events 5 (realtime notification of PLC changes, "by a realtime broadcast provider", channels and payloads not shown) without a hosted provider: a wallet follows its PLC and its redemption as Server-Sent Events, fed by PostgreSQL LISTEN/NOTIFY so every API replica streams every change; gated by the canary flag plc_live_events',
  },
  {
    operation: 'GET /api/v1/admin/events',
    reason:
      'the operator\'s live view of Events 5: every change of a PLC, a redemption or a charge as Server-Sent Events, resumable with Last-Event-ID; the web console\'s live feed reads it',
  },
  {
    operation: 'GET /api/v1/admin/reconcile/runs/{run_id}',
    reason:
      'progress of a real reconcile run: the spec\'s tools answer a long run with nothing to follow it by but the Temporal UI; the console shows a run\'s counts as its batches record items, then its report',
  },
  {
    operation: 'GET /api/v1/admin/redemptions/{redemption_id}',
    reason:
      'one redemption for the operator who retries it: its payout attempts and every retry asked for, with who, why and the outcome (the spec lists redemptions only)',
  },
  {
    operation: 'POST /api/v1/admin/redemptions/{redemption_id}/retry',
    reason:
      'the operators\' main job (design brief: "operators can retry a failed settlement from the API"): retry one stalled or stuck settlement as a step of its own workflow, sharing the pending-transfers tool\'s gateway read and resume path, where that tool retries a whole batch',
  },
  {
    operation: 'GET /api/v1/admin/users',
    reason:
      'administrators and their roles, for a super_admin (issue 40): the spec names the roles admin and super_admin but no way to manage them; ' +
      'the console lists them from here (bounded page, never a password hash) instead of sending the operator to `npm run admin` on a database host',
  },
  {
    operation: 'POST /api/v1/admin/users',
    reason: "a super_admin creates an administrator with a role from the console (the spec's roles, managed until now only by `npm run admin`, whose rules it shares: services/admin-users.ts); an operation-log entry names who did it",
  },
  {
    operation: 'POST /api/v1/admin/users/{username}/role',
    reason: 'a super_admin changes a role (idempotent; the last active super_admin cannot be demoted), recorded in the operation log',
  },
  {
    operation: 'POST /api/v1/admin/users/{username}/disable',
    reason: "a super_admin shuts an administrator out at once (logins refused, tokens ended: a leaver, a stolen laptop) without a shell on a database host; idempotent, recorded, never the last active super_admin",
  },
  {
    operation: 'POST /api/v1/admin/users/{username}/enable',
    reason: 'the undo of a disable from the console (idempotent, recorded)',
  },
  {
    operation: 'POST /api/v1/admin/users/{username}/password',
    reason: "a super_admin sets a forgotten password from the console (the command line's passwd); the user's tokens end, the change is recorded",
  },
  {
    operation: 'GET /api/v1/blocklist',
    reason:
      'the signed blocklist (issue 21; BIS Project Polaris recommends one): every key a proven fork blocked, complete and versioned, signed by the service (docs/protocol.md section 18), so that a wallet offline refuses a PLC a blocked key issued or signed; the spec has no way to tell wallets which keys cheated',
  },
  {
    operation: 'GET /api/v1/admin/blocklist',
    reason:
      'the operators\' view of the blocklist: each block with the fork\'s risk flag behind it and any lift (who, when, why), and the current list version; the spec\'s risk flags say a fork happened, not that its key is refused',
  },
  {
    operation: 'POST /api/v1/admin/blocklist/{pubkey}/lift',
    reason:
      'an admin lifts a block with a reason, recorded with the entry, and the next list version leaves the key out (issue 21): a block is automatic on proof, its end is a human decision',
  },
  {
    operation: 'GET /api/v1/b2b/plans',
    reason:
      'the spec names "B2B plans" without a path: the plans a business signs up for, from the one definition the B2B fee quote prices (src/b2b/plans.ts; docs/b2b.md)',
  },
  {
    operation: 'POST /api/v1/b2b/signup',
    reason: 'the spec names "B2B sign-up" without a path or payload: a business (legal name, CNPJ checked, contact e-mail, plan) asks to become a customer (docs/b2b.md)',
  },
  {
    operation: 'GET /api/v1/b2b/customers/{customer_id}',
    reason: 'the spec names "B2B status by id" without a path: the sign-up\'s state by its random id, the CNPJ truncated, readable before any credential exists (docs/b2b.md)',
  },
  {
    operation: 'GET /api/v1/b2b/me',
    reason: 'a signed request\'s own customer and credential: what an integrator calls first to check its signing, and how a terminal learns its scopes and expiry (docs/b2b.md)',
  },
  {
    operation: 'POST /api/v1/b2b/credentials/rotate',
    reason: 'credential rotation by the customer itself, signed with the key being replaced, which keeps working for a grace period so terminals switch one by one (issue 24; docs/b2b.md)',
  },
  {
    operation: 'GET /api/v1/admin/b2b/customers',
    reason: 'the admin\'s queue of sign-ups to review and list of business customers, bounded, by status: the spec\'s approve/suspend/block need a way to find whom to decide on',
  },
  {
    operation: 'GET /api/v1/admin/b2b/customers/{customer_id}',
    reason: 'the admin detail of a business customer: the full CNPJ (shown nowhere else), every recorded state change with its reason, and its credentials (never a secret)',
  },
  {
    operation: 'POST /api/v1/admin/b2b/customers/{customer_id}/approve',
    reason: 'the spec names "admin approve ... of B2B customers" without a path: PENDING_REVIEW or SUSPENDED -> ACTIVE with a reason, recorded; the first approval issues the API credential',
  },
  {
    operation: 'POST /api/v1/admin/b2b/customers/{customer_id}/suspend',
    reason: 'the spec names "admin ... suspend ... of B2B customers" without a path: ACTIVE -> SUSPENDED with a reason, recorded; its signed requests are refused until approved again',
  },
  {
    operation: 'POST /api/v1/admin/b2b/customers/{customer_id}/block',
    reason: 'the spec names "admin ... block of B2B customers" without a path: any state -> BLOCKED, final, with a reason, recorded; every credential revoked',
  },
  {
    operation: 'POST /api/v1/admin/b2b/customers/{customer_id}/credentials',
    reason: 'a further API credential for an active customer (another terminal or system), with a subset of its plan\'s scopes; the secret shown once',
  },
  {
    operation: 'POST /api/v1/admin/b2b/credentials/{key_id}/revoke',
    reason: 'revocation of one API credential at once (a stolen terminal), with a reason: the spec says stored credentials exist, issue 24 asks for their revocation',
  },
  {
    operation: 'POST /api/v1/pos/sync',
    reason:
      'the spec names "a POS batch sync at /api/v1/pos/sync" without a payload: a point-of-sale terminal uploads the PLCs it took offline, each registered (and optionally redeemed) through the transfer and redemption paths, idempotent by batch id, signed with the customer\'s credential (docs/b2b.md)',
  },
];

/** Whether `METHOD /path` (OpenAPI form) is covered by an entry of `routeExtensions`. */
export function isRouteExtension(operation: string, extensions: readonly RouteExtension[] = routeExtensions): boolean {
  const [method, path] = operation.split(' ', 2) as [string, string];
  return extensions.some((extension) => {
    const [extensionMethod, extensionPath] = extension.operation.split(' ', 2) as [string, string];
    if (extensionMethod !== '*' && extensionMethod !== method) return false;
    if (extensionPath.endsWith('/*')) return path.startsWith(extensionPath.slice(0, -1));
    return extensionPath === path;
  });
}
