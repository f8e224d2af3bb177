import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { getFeeSchedule, currentFeeScheduleVersion, insertB2bQuote, listFeeScheduleVersions } from '../../db/fees.ts';
import { consentToFees, estimateFee, feeRailOf } from '../../services/fees.ts';
import { b2bPlanIds, b2bPlans, type B2bPlanId } from '../../src/b2b/plans.ts';
import { DomainError } from '../../src/errors.ts';
import { b2bQuoteValidityDays, quotePlan, type FeeRule } from '../../src/fees/schedule.ts';
import { formatAmount } from '../../src/money/currency.ts';
import { payoutRailOf, type PayoutRail } from '../../src/settlement/payout-destination.ts';
import { hexToBytes } from '../../src/protocol/bytes.ts';
import { errorResponse, standardErrors } from '../schemas/common.ts';
import { exampleFeeConsent, examplePubkeys } from '../schemas/examples.ts';
import {
  b2bQuoteRequest,
  b2bQuoteResponse,
  feeConsentRequest,
  feeConsentResponse,
  feeEstimateRequest,
  feeEstimateResponse,
  feeScheduleQuery,
  feeScheduleResponse,
} from '../schemas/fees.ts';
import { parseMoney } from '../schemas/money.ts';

/**
 * Fees (docs/limits-and-fees.md, "Fees"): the versioned schedule, estimates, the owners' signed
 * consents, and B2B quotes priced from the one plans definition (src/b2b/plans.ts).
 */

export const roundingRule =
  'fee = fixed + round_half_up(amount x rate_bps / 10000), then raised to min, lowered to max, never above the amount; in minor units; net = amount - fee';

// Rule amounts are minor units of the amount's currency; every currency served has 2 decimals.
const view = (minor: bigint): string => formatAmount(minor, 'BRL');

function ruleView(rule: FeeRule) {
  return {
    rail: rule.rail.toLowerCase() as PayoutRail,
    tier: rule.tier,
    fixed: view(rule.fixedMinor),
    rate_bps: rule.rateBps,
    min: view(rule.minMinor),
    max: rule.maxMinor === null ? null : view(rule.maxMinor),
  };
}

function rateLimit(groupId: string, max: number) {
  return { rateLimit: { max, timeWindow: 60_000, groupId, keyGenerator: (request: FastifyRequest) => request.ip } };
}


export async function feeRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool, config } = app.deps;
  const perMinute = config.RATE_LIMIT_FEES_PER_MINUTE;

  routes.post(
    '/estimate',
    {
      schema: {
        tags: ['fees'],
        summary: 'Estimate the fee of a payout: amount, rail and owner; charges nothing, records nothing',
        description:
          "The fee a redemption of `amount` over `rail` would be charged, with its parts: the schedule version (the owner's consent in force, else the current version), the owner's tier, the rule applied, the fixed and proportional parts, the bound that decided, and the net paid out. `consent_required: true` says a redemption would be refused with 409 `FEE_CONSENT_REQUIRED` until the owner consents (`POST /api/v1/fees/consent`). `tier` prices it for that tier instead of the owner's (without `owner_id` the default is BASIC). Refusals: 422 for a bad amount (not positive, too many decimals for the currency, too large), a tier or currency; 422 `UNSUPPORTED_RAIL` for a rail other than `pix` and `boleto` (`PIX` and `BOLETO` are read as those; the answer says `pix` or `boleto`); 404 `FEE_SCHEDULE_VERSION_UNKNOWN`.",
        body: feeEstimateRequest,
        requestExample: { body: { amount: '150.00', currency: 'BRL', rail: 'boleto', owner_id: examplePubkeys.bob } },
        response: { 200: feeEstimateResponse, 404: errorResponse, 429: errorResponse, ...standardErrors },
      },
      config: rateLimit('fees-estimate', perMinute),
    },
    async (request) => {
      const body = request.body;
      const amountMinor = parseMoney(body.amount, body.currency, { positive: true });
      const rail = payoutRailOf(body.rail, 'rail', { signed: false });
      const priced = await estimateFee(pool, { amountMinor, rail: feeRailOf(rail), ownerId: body.owner_id, tier: body.tier, version: body.schedule_version });
      const money = (minor: bigint) => formatAmount(minor, body.currency);
      return {
        amount: money(amountMinor),
        currency: body.currency,
        rail,
        owner_id: body.owner_id ?? null,
        tier: priced.tier,
        schedule_version: priced.version,
        fee: money(priced.feeMinor),
        net_amount: money(priced.netMinor),
        fixed_part: money(priced.fixedMinor),
        proportional_part: money(priced.proportionalMinor),
        bound: priced.bound,
        rule: ruleView(priced.rule),
        consented_version: priced.consent?.version ?? null,
        consent_required: priced.consentRequired,
      };
    },
  );

  routes.get(
    '/schedule',
    {
      schema: {
        tags: ['fees'],
        summary: 'The fee schedule: the current version (or the one asked for) with its rules per rail and tier',
        description:
          'Public. The rules of one schedule version (default the current one): per rail (`pix`, `boleto`) and reputation tier, a fixed part plus basis points of the amount, between a minimum and a maximum; a rule with `tier: null` applies to every tier without one of its own. Amounts are in the currency of the amount priced. Also the rounding rule and the latest 20 versions. A version never changes once published: a consent to it keeps its prices. 404 `FEE_SCHEDULE_VERSION_UNKNOWN`.',
        querystring: feeScheduleQuery,
        requestExample: { querystring: { version: 1 } },
        response: { 200: feeScheduleResponse, 404: errorResponse, ...standardErrors },
      },
    },
    async (request) => {
      const current = await currentFeeScheduleVersion(pool);
      const version = request.query.version ?? current;
      const schedule = await getFeeSchedule(pool, version);
      if (schedule === null) throw new DomainError('FEE_SCHEDULE_VERSION_UNKNOWN', `no fee schedule version ${version}`, { schedule_version: version });
      const versions = await listFeeScheduleVersions(pool, 20);
      return {
        version: schedule.version,
        current_version: current,
        description: schedule.description,
        published_at: schedule.publishedAt.toISOString(),
        rounding: roundingRule,
        rules: schedule.rules.map(ruleView),
        versions: versions.map((row) => ({ version: row.version, description: row.description, published_at: row.published_at.toISOString() })),
      };
    },
  );

  routes.post(
    '/consent',
    {
      schema: {
        tags: ['fees'],
        summary: "Record an owner's consent to one fee schedule version, signed by the owner's key",
        description:
          "The owner (a key: the owner of the redemptions it is paid) consents to the schedule version it names, signing `svc:fee-consent:{device_id}:{public_key}:{schedule_version}:{operation_timestamp}` within the clock tolerance of now. From then on its redemptions are charged by that version, whatever later versions say, until it consents to another. Idempotent: a consent already recorded answers 200 with its first time and device (`created: false`). Refusals: 404 `FEE_SCHEDULE_VERSION_UNKNOWN`; 409 `FEE_SCHEDULE_SUPERSEDED` (a first consent must be to the current version); 422 `SIGNATURE_INVALID`, `AUTHORIZATION_STALE`, or a malformed field.",
        body: feeConsentRequest,
        requestExample: { body: exampleFeeConsent },
        response: { 200: feeConsentResponse, 404: errorResponse, 409: errorResponse, 429: errorResponse, ...standardErrors },
      },
      config: rateLimit('fees-consent', perMinute),
    },
    async (request) => {
      const body = request.body;
      const result = await consentToFees(
        pool,
        {
          publicKey: hexToBytes(body.public_key, 32),
          deviceId: body.device_id,
          scheduleVersion: body.schedule_version,
          operationTimestampMs: body.operation_timestamp,
          signature: hexToBytes(body.device_signature, 64),
        },
        { nowMs: Date.now(), freshnessMs: config.CLOCK_TOLERANCE_MS },
      );
      return {
        owner_id: result.consent.owner_id,
        schedule_version: result.consent.version,
        device_id: result.consent.device_id,
        consented_at: result.consent.consented_at.toISOString(),
        created: result.created,
        in_force: result.inForce,
      };
    },
  );

  routes.post(
    '/b2b/quote',
    {
      schema: {
        tags: ['fees'],
        summary: 'Quote the B2B plans for a monthly volume: subscription plus per-redemption price, valid for 30 days',
        description: `Prices every plan of the B2B offer (or the one named) for \`monthly_volume\` redemptions a month of \`average_amount\` BRL: the volume band the plan applies, the price of one redemption (the band's fixed part plus its basis points of the average amount, by the schedule's rounding rule), the month's usage and total with the subscription. A plan that does not take the volume says why. The quote is stored with its id and holds its prices until \`valid_until\` (${b2bQuoteValidityDays} days). Refusals: 422 for a volume outside 1 to 100,000,000, a bad amount (not positive, more than 2 decimals, too large) or an unknown plan.`,
        body: b2bQuoteRequest,
        requestExample: { body: { monthly_volume: 25_000, average_amount: '42.50' } },
        response: { 200: b2bQuoteResponse, 429: errorResponse, ...standardErrors },
      },
      config: rateLimit('fees-b2b-quote', perMinute),
    },
    async (request) => {
      const body = request.body;
      const averageMinor = parseMoney(body.average_amount, 'BRL', { positive: true, field: 'average_amount' });
      const ids: readonly B2bPlanId[] = body.plan === undefined ? b2bPlanIds : [body.plan];
      const quotes = ids.map((id) => quotePlan(b2bPlans[id], body.monthly_volume, averageMinor));
      let cheapest: B2bPlanId | null = null;
      let cheapestMinor = 0n;
      for (const quote of quotes) {
        if (quote.available && (cheapest === null || quote.totalMinor < cheapestMinor)) [cheapest, cheapestMinor] = [quote.plan.id, quote.totalMinor];
      }
      const answer = {
        currency: 'BRL' as const,
        monthly_volume: body.monthly_volume,
        average_amount: view(averageMinor),
        plans: quotes.map((quote) => {
          const base = { plan: quote.plan.id, name: quote.plan.name, monthly_fee: view(quote.plan.monthlyFeeMinor) };
          if (!quote.available) return { ...base, available: false, reason: quote.reason, band: null, per_redemption: null, usage: null, total_monthly: null };
          return {
            ...base,
            available: true,
            reason: null,
            band: { from_monthly_count: quote.bandFromMonthlyCount, fixed: view(quote.bandFixedMinor), rate_bps: quote.bandRateBps },
            per_redemption: view(quote.perRedemptionMinor),
            usage: view(quote.usageMinor),
            total_monthly: view(quote.totalMinor),
          };
        }),
        cheapest_plan: cheapest,
      };
      const quoteId = randomUUID();
      const stored = await insertB2bQuote(pool, {
        id: quoteId,
        monthlyCount: body.monthly_volume,
        averageAmountMinor: averageMinor,
        currency: 'BRL',
        answer,
        validDays: b2bQuoteValidityDays,
      });
      return { quote_id: quoteId, created_at: stored.created_at.toISOString(), valid_until: stored.valid_until.toISOString(), ...answer };
    },
  );
}
