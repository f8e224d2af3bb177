import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  getReputation,
  listReputation,
  listReputationEvents,
  reputationSortKeys,
  reputationStats,
  type ReputationEventRow,
  type ReputationRow,
} from '../../db/reputation.ts';
import { ceilingsOf } from '../../services/plc-limits.ts';
import { DomainError } from '../../src/errors.ts';
import { automaticLimits, tierShares } from '../../src/limits/progressive.ts';
import { formatAmount } from '../../src/money/currency.ts';
import { reputationEventKinds, reputationTierNames, reputationTiers, scoreMax } from '../../src/reputation/rules.ts';
import { examplePubkeys } from '../schemas/examples.ts';
import { adminErrors, errorResponse } from '../schemas/common.ts';
import { amountSchema, ownerIdSchema } from '../schemas/money.ts';

/** Reputation scores (docs/limits-and-fees.md, "Reputation"). Every route needs an admin token. */

function decimal(amountMinor: bigint): string {
  return formatAmount(amountMinor, 'BRL');
}

const tierSchema = z.enum(reputationTierNames);

const reputationResponse = z
  .object({
    owner_id: z.string(),
    score: z.number().int().describe('the stored score, as of its latest event'),
    tier: tierSchema.describe("the stored score's tier"),
    current_score: z.number().int().describe('the score now: the decay due since the last independent settlement applied'),
    current_tier: tierSchema.describe("the tier the owner holds now (limits and fees): the current score's tier, lowered to the highest tier whose gates (account age, distinct independent counterparties) it meets"),
    counterparties: z.number().int().describe('distinct independent payers counted (keys of one owner count once)'),
    last_credit_at: z.string().describe('the last independent settlement (the decay clock), or the first event'),
    sanctioned: z.boolean().describe('a proven fork or a blocked key: RESTRICTED whatever the score'),
    settled_volume: amountSchema,
    account_age_credits: z.number().int(),
    events: z.number().int(),
    opened_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'ReputationResponse' });

function toReputation(row: ReputationRow): z.infer<typeof reputationResponse> {
  return {
    owner_id: row.owner_id,
    score: row.score,
    tier: row.tier,
    current_score: row.current_score,
    current_tier: row.current_tier,
    counterparties: row.counterparties,
    last_credit_at: row.last_credit_at.toISOString(),
    sanctioned: row.sanctioned,
    settled_volume: decimal(row.settled_volume_minor),
    account_age_credits: row.age_credits,
    events: Number(row.events_count),
    opened_at: row.opened_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

const reputationEventResponse = z
  .object({
    id: z.string(),
    kind: z.enum(reputationEventKinds),
    delta: z.number().int(),
    reason: z.string(),
    reference: z.string().nullable(),
    amount: amountSchema.nullable(),
    severity: z.string().nullable(),
    counterparty: z.string().nullable().describe('a settlement: who paid the bearer'),
    credit_eligible: z.boolean().nullable().describe('a settlement: whether it could credit points (at least the dust threshold, an independent payer not credited in the window)'),
    points_limit: z.number().int().nullable().describe('a settlement: the gain its window had left; a decay: its step'),
    score_after: z.number().int(),
    tier_after: tierSchema,
    created_at: z.string(),
  })
  .meta({ id: 'ReputationEvent' });

function toEvent(row: ReputationEventRow): z.infer<typeof reputationEventResponse> {
  return {
    id: row.id.toString(),
    kind: row.kind,
    delta: row.delta,
    reason: row.reason,
    reference: row.reference,
    amount: row.amount_minor === null ? null : decimal(row.amount_minor),
    severity: row.severity,
    counterparty: row.counterparty,
    credit_eligible: row.credit_eligible,
    points_limit: row.points_limit,
    score_after: row.score_after,
    tier_after: row.tier_after,
    created_at: row.created_at.toISOString(),
  };
}

const ownerParam = z.object({ owner_id: ownerIdSchema });

export async function adminReputationRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool, config } = app.deps;
  const ceilings = ceilingsOf(config);
  app.addHook('onRequest', app.requireAdmin());
  const security = [{ bearer: [] }];

  async function ownerOr404(ownerId: string): Promise<ReputationRow> {
    const row = await getReputation(pool, ownerId);
    if (row === null) throw new DomainError('REPUTATION_NOT_FOUND', 'this owner has no reputation event yet', { owner_id: ownerId });
    return row;
  }

  routes.get(
    '/reputation/stats',
    {
      schema: {
        tags: ['admin: reputation'],
        summary: 'Reputation statistics: owners per tier, sanctioned owners, average score, events of the last 24 hours',
        description:
          "How the owners spread over the tiers (with each tier's score bounds and its share of the PLC limit ceilings), how many are sanctioned (a proven fork or a blocked key), the average score and how many reputation events were recorded in the last 24 hours. docs/limits-and-fees.md has the rules.",
        security,
        response: {
          200: z.object({
            owners: z.number().int(),
            sanctioned: z.number().int(),
            average_score: z.number().nullable(),
            events_last_24h: z.number().int(),
            tiers: z.array(
              z.object({
                tier: tierSchema,
                score_min: z.number().int(),
                score_max: z.number().int(),
                owners: z.number().int(),
                max_amount: amountSchema.describe("the tier's per-PLC limit (without override)"),
                daily_limit: amountSchema.describe("the tier's 24-hour limit before the volume bonus"),
              }),
            ),
          }),
          ...adminErrors,
        },
      },
    },
    async () => {
      const stats = await reputationStats(pool);
      return {
        owners: Number(stats.owners),
        sanctioned: Number(stats.sanctioned),
        average_score: stats.average_score === null ? null : Number(stats.average_score),
        events_last_24h: Number(stats.events_last_24h),
        tiers: stats.by_tier.map((row) => {
          const limits = automaticLimits({ tier: row.tier, settledVolumeMinor: 0n }, ceilings);
          return { ...row, max_amount: decimal(limits.maxAmountMinor), daily_limit: decimal(limits.dailyLimitMinor) };
        }),
      };
    },
  );

  routes.get(
    '/reputation/list',
    {
      schema: {
        tags: ['admin: reputation'],
        summary: 'Owners by reputation, a page at a time, optionally one tier',
        description: `Every owner with a score, sorted by \`sort_by\` (${reputationSortKeys.join(', ')}; default score) in \`sort_dir\` (asc or desc; default desc), ties by owner id; \`tier\` keeps one tier (${reputationTierNames.join(', ')}). An unknown tier, sort key or direction is a 422.`,
        security,
        querystring: z.object({
          tier: tierSchema.optional(),
          limit: z.coerce.number().int().min(1).max(200).default(50).meta({ examples: [50] }),
          offset: z.coerce.number().int().min(0).max(1_000_000).default(0).meta({ examples: [0] }),
          sort_by: z.enum(reputationSortKeys).default('score'),
          sort_dir: z.enum(['asc', 'desc']).default('desc'),
        }),
        requestExample: { querystring: { tier: 'STANDARD', limit: 50, offset: 0, sort_by: 'score', sort_dir: 'desc' } },
        response: { 200: z.array(reputationResponse), ...adminErrors },
      },
    },
    async (request) => {
      const { tier, limit, offset, sort_by: sortBy, sort_dir: sortDir } = request.query;
      return (await listReputation(pool, { tier, sortBy, sortDir }, { limit, offset })).map(toReputation);
    },
  );

  routes.get(
    '/reputation/:owner_id',
    {
      schema: {
        tags: ['admin: reputation'],
        summary: "An owner's detailed score: tier and its bounds, the next tier, the automatic PLC limits",
        description:
          "The owner's score, tier and sanction, its tier's bounds and how far the next tier is, its settled volume and the automatic PLC limits that tier and volume give (an approved increase of one device may raise them: `GET /api/v1/admin/plc-limits/{device_id}`). 404 `REPUTATION_NOT_FOUND` for an owner with no event yet.",
        security,
        params: ownerParam,
        requestExample: { params: { owner_id: examplePubkeys.alice } },
        response: {
          200: reputationResponse.extend({
            tier_bounds: z.object({ score_min: z.number().int(), score_max: z.number().int() }),
            next_tier: z.object({ tier: tierSchema, points_needed: z.number().int() }).nullable(),
            limits: z.object({ max_amount: amountSchema, daily_limit: amountSchema, tier_max_amount_bp: z.number().int(), tier_daily_limit_bp: z.number().int() }),
          }),
          404: errorResponse,
          ...adminErrors,
        },
      },
    },
    async (request) => {
      const row = await ownerOr404(request.params.owner_id);
      const index = reputationTiers.findIndex((tier) => tier.tier === row.tier);
      const bounds = reputationTiers[index] ?? reputationTiers[0];
      const next = row.sanctioned ? undefined : reputationTiers[index + 1];
      const limits = automaticLimits({ tier: row.current_tier, settledVolumeMinor: row.settled_volume_minor }, ceilings);
      return {
        ...toReputation(row),
        tier_bounds: { score_min: row.sanctioned ? 0 : bounds.scoreMin, score_max: row.sanctioned ? scoreMax : bounds.scoreMax },
        next_tier: next === undefined ? null : { tier: next.tier, points_needed: next.scoreMin - row.score },
        limits: {
          max_amount: decimal(limits.maxAmountMinor),
          daily_limit: decimal(limits.dailyLimitMinor),
          tier_max_amount_bp: Number(tierShares[row.current_tier].maxAmountBp),
          tier_daily_limit_bp: Number(tierShares[row.current_tier].dailyLimitBp),
        },
      };
    },
  );

  routes.get(
    '/reputation/:owner_id/history',
    {
      schema: {
        tags: ['admin: reputation'],
        summary: "An owner's reputation events, newest first: each with its delta, reason, resulting score and tier",
        description:
          'Every event that moved the score, newest first, at most `limit` (1 to 200, default 50): its kind, the delta it made (after the 0..1000 clamp; a sanction sets the score to 0), the reason, the row it is about (token id, redemption id, risk flag id), the amount or severity the rule used, and the score and tier after it. Summed from the start (500), the deltas give the score. 404 `REPUTATION_NOT_FOUND`.',
        security,
        params: ownerParam,
        querystring: z.object({ limit: z.coerce.number().int().min(1).max(200).default(50).meta({ examples: [50] }) }),
        requestExample: { params: { owner_id: examplePubkeys.alice }, querystring: { limit: 50 } },
        response: { 200: z.array(reputationEventResponse), 404: errorResponse, ...adminErrors },
      },
    },
    async (request) => {
      await ownerOr404(request.params.owner_id);
      return (await listReputationEvents(pool, request.params.owner_id, request.query.limit)).map(toEvent);
    },
  );
}
