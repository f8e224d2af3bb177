import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { blocklistVersion, keyBlockReasons, listBlocks, type KeyBlockRow } from '../../db/blocklist.ts';
import { loggedOperation } from '../../db/operation-log.ts';
import { createBlocklistPublisher, liftKeyBlock } from '../../services/blocklist.ts';
import { blocklistSigningKey } from '../../services/service-keys.ts';
import { publishedReceiptKeys } from '../../services/issue-receipt.ts';
import { DomainError } from '../../src/errors.ts';
import { signedBlocklistJsonSchema } from '../../src/protocol/index.ts';
import { deviceRateLimit } from '../device-id.ts';
import { adminErrors, errorResponse, pageQuery, standardErrors } from '../schemas/common.ts';
import { examplePubkeys } from '../schemas/examples.ts';
import { idempotencyKeyHeader } from '../schemas/ledger.ts';
import { pubkeySchema } from '../schemas/plc.ts';

/**
 * The blocklist of keys proven to cheat (docs/protocol.md section 18), beyond the spec
 * (api/extensions.ts): the signed list anyone downloads, the admins' view, and the lift.
 */

const keyBlockResponse = z
  .object({
    id: z.string().uuid(),
    pubkey: z.string(),
    owner_id: z.string(),
    reason: z
      .enum(keyBlockReasons)
      .describe('DOUBLE_SPEND_FORK: a fork it signed; ISSUER_DOUBLE_ISSUE: two commitments it signed under one token id; CANCEL_AFTER_TRANSFER: it cancelled a PLC after signing its first hop'),
    risk_flag_id: z.string().uuid().describe('the flag of the same name: the evidence is in its details'),
    token_id: z.string().uuid().nullable(),
    route: z.string().describe('where the fork was shown: transfer, redeem, settlements'),
    in_force: z.boolean(),
    blocked_at: z.string(),
    blocked_in_version: z.number().int().describe('the first list version with this key'),
    lifted_at: z.string().nullable(),
    lifted_by: z.string().nullable(),
    lift_reason: z.string().nullable(),
    lifted_in_version: z.number().int().nullable().describe('the first list version without this key again'),
  })
  .meta({ id: 'KeyBlockResponse' });

function toKeyBlock(row: KeyBlockRow): z.infer<typeof keyBlockResponse> {
  return {
    ...row,
    in_force: row.lifted_at === null,
    blocked_at: row.blocked_at.toISOString(),
    lifted_at: row.lifted_at?.toISOString() ?? null,
  };
}

const exampleBlockedKey = examplePubkeys.bob;

/** `GET /api/v1/blocklist`: no credentials; a wallet verifies the list against the key it trusts. */
export async function blocklistRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool, config } = app.deps;
  const publisher = createBlocklistPublisher({ pool, signingKey: blocklistSigningKey(config), receiptKeys: publishedReceiptKeys(config) });

  routes.get(
    '/blocklist',
    {
      schema: {
        tags: ['plc'],
        summary: 'The signed blocklist: every key a proven fork blocked, complete, versioned, signed by the service',
        description:
          'The complete list of blocked keys at its current version (docs/protocol.md section 18): keys in ascending order, the version (one more at every block and every lift) and when it was made, signed with Ed25519 by the service\'s blocklist key over the canonical bytes of format v2, `"svc:blocklist:v2\\0" | u64 version | u64 published_at_ms | u32 count | keys | u32 receipt_count | (receipt_key | u64 valid_from_ms | u64 valid_until_ms)...`: beside the blocked keys it carries the keys trusted for the service\'s issue receipts with their validity periods (section 19.4), so a wallet learns a rotation or a revocation at its next refresh. A wallet verifies it against the service key it trusts (published in docs/protocol.md), never the `service_pubkey` the list names, keeps it, and refuses offline a PLC issued or signed by a listed key. No credentials.',
        response: { 200: signedBlocklistJsonSchema.meta({ id: 'SignedBlocklist' }), 429: errorResponse, ...standardErrors },
      },
      config: deviceRateLimit('blocklist', config.RATE_LIMIT_PLC_PER_MINUTE),
    },
    async () => publisher.signedList(),
  );
}

/** The admins' view of the blocklist and the lift. Every route needs an admin token. */
export async function adminBlocklistRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool } = app.deps;
  app.addHook('onRequest', app.requireAdmin());
  const security = [{ bearer: [] }];

  routes.get(
    '/blocklist',
    {
      schema: {
        tags: ['admin: risk'],
        summary: 'Blocks of keys proven to cheat, newest first, with the fork behind each and any lift',
        description:
          'Every block (a key, the fork\'s risk flag that proves it, where it was shown, when) and its lift (who, when, why), newest first, a page at a time; `status` `active` (in force, the default), `lifted` or `all`; `pubkey` one key\'s history. `version` is the current list version, the one `GET /api/v1/blocklist` serves.',
        security,
        querystring: pageQuery.extend({
          status: z.enum(['active', 'lifted', 'all']).default('active'),
          pubkey: pubkeySchema.optional(),
        }),
        requestExample: { querystring: { status: 'all', pubkey: exampleBlockedKey, limit: 50, offset: 0 } },
        response: {
          200: z
            .object({ version: z.number().int(), published_at: z.string(), items: z.array(keyBlockResponse) })
            .meta({ id: 'AdminBlocklistResponse' }),
          ...adminErrors,
        },
      },
    },
    async (request) => {
      const { status, pubkey, limit, offset } = request.query;
      // The version first: an entry made after it is in a later version, never missing from this one's.
      const version = await blocklistVersion(pool);
      const items = await listBlocks(pool, { status, pubkey }, { limit, offset });
      return { version: version.version, published_at: version.published_at.toISOString(), items: items.map(toKeyBlock) };
    },
  );

  routes.post(
    '/blocklist/:pubkey/lift',
    {
      schema: {
        tags: ['admin: risk'],
        summary: "Lift a key's block, with a reason: the next list version is without the key",
        description:
          "Lifts the block in force of this key, recording the calling admin and the reason; the list's version grows by one and the signed list leaves the key out from that version on (`lifted_in_version`). The fork's risk flag is not touched (resolve it apart). A later, different fork by the key blocks it again; the same fork shown again does not. 404 `KEY_NOT_BLOCKED` when the key has no block in force. The lift (or its refusal) is an operation-log entry KEY_BLOCK_LIFT naming the admin. The optional Idempotency-Key makes a retry answer the stored 200.",
        security,
        params: z.object({ pubkey: pubkeySchema }),
        headers: z.object({ 'idempotency-key': idempotencyKeyHeader.optional() }),
        body: z.strictObject({ reason: z.string().trim().min(3).max(1000).describe('why the block is lifted (kept with the entry)') }),
        requestExample: {
          params: { pubkey: exampleBlockedKey },
          body: { reason: 'the second spend was refunded by the culprit; support ticket 4711' },
        },
        response: { 200: keyBlockResponse, 404: errorResponse, ...adminErrors },
      },
      config: { idempotency: { scope: 'blocklist-lift' } },
    },
    async (request) => {
      const admin = request.admin;
      if (admin === null) throw new DomainError('UNAUTHENTICATED', 'a bearer token is required');
      const lifted = await loggedOperation(
        pool,
        { operationType: 'KEY_BLOCK_LIFT', step: 'lift', ownerId: request.params.pubkey, referenceId: request.params.pubkey, actor: admin.username },
        () => liftKeyBlock(pool, request.params.pubkey, { liftedBy: admin.username, reason: request.body.reason }),
      );
      request.log.info({ pubkey: lifted.pubkey, block_id: lifted.id, admin: admin.username, version: lifted.lifted_in_version }, 'key block lifted');
      return toKeyBlock(lifted);
    },
  );
}
