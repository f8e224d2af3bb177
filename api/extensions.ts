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
    operation: '* /api/v1/dev/*',
    reason:
      'developer simulation endpoints (named by the spec without paths): drive the gateway simulator so an integrator can test end to end without a real gateway; never registered in production',
  },
  {
    operation: 'GET /api/v1/redemptions/{redemption_id}',
    reason:
      "the bearer follows its own redemption (status, amounts, the gateway's transfer id once known) without admin rights; the spec only offers the admin list and the gateway transfer's status by a transfer id the bearer never learns. The redemption id (a random UUID v4 given only in the redeem answer, as status_url) is the key",
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
