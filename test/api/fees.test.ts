import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishFeeSchedule } from '../../db/fees.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { newWallet } from '../support/wallet.ts';
import { feeConsentBody } from '../support/settlement.ts';

/**
 * The fee routes against a real PostgreSQL (docs/limits-and-fees.md, "Fees"): the schedule and
 * its versions, estimates without side effects, signed and idempotent consents, B2B quotes, and
 * every refusal with nothing changed.
 */

const toleranceMs = 300_000;
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_FEES_PER_MINUTE: '100000', CLOCK_TOLERANCE_MS: String(toleranceMs) });
});
afterAll(async () => {
  await t?.close();
});

const post = (url: string, payload: unknown) => t.app.inject({ method: 'POST', url: `/api/v1/fees${url}`, payload: payload as object });
const estimate = (payload: Record<string, unknown>) => post('/estimate', payload);

async function rowCounts() {
  const result = await t.db.pool.query(
    `SELECT (SELECT count(*) FROM fee_consents)::int AS consents, (SELECT count(*) FROM b2b_quotes)::int AS quotes,
            (SELECT count(*) FROM fee_schedule_versions)::int AS versions, (SELECT count(*) FROM ledger_transactions)::int AS transactions`,
  );
  return result.rows[0] as { consents: number; quotes: number; versions: number; transactions: number };
}

function expect422(response: { statusCode: number; json(): unknown }, field: string) {
  expect(response.statusCode).toBe(422);
  const detail = (response.json() as { detail: { loc: (string | number)[] }[] }).detail;
  expect(detail.some((item) => item.loc.includes(field))).toBe(true);
}

describe('GET /api/v1/fees/schedule', () => {
  it('shows version 1 as the migration seeded it, with the rounding rule', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/fees/schedule' });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body).toMatchObject({ version: 1, current_version: 1, versions: [{ version: 1 }] });
    expect(body.rounding).toMatch(/round_half_up/);
    expect(body.rules).toEqual([
      { rail: 'boleto', tier: null, fixed: '3.50', rate_bps: 50, min: '2.00', max: '15.00' },
      { rail: 'boleto', tier: 'STANDARD', fixed: '3.00', rate_bps: 25, min: '2.00', max: '15.00' },
      { rail: 'boleto', tier: 'TRUSTED', fixed: '2.50', rate_bps: 0, min: '2.00', max: '15.00' },
      { rail: 'boleto', tier: 'PREMIUM', fixed: '2.00', rate_bps: 0, min: '2.00', max: '15.00' },
      { rail: 'pix', tier: null, fixed: '0.00', rate_bps: 0, min: '0.00', max: null },
    ]);
  });

  it('refuses an unknown version (404) and a malformed one (422)', async () => {
    const unknown = await t.app.inject({ method: 'GET', url: '/api/v1/fees/schedule?version=99' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ code: 'FEE_SCHEDULE_VERSION_UNKNOWN', details: { schedule_version: 99 } });
    for (const bad of ['0', '-1', 'x', '1.5']) expect422(await t.app.inject({ method: 'GET', url: `/api/v1/fees/schedule?version=${bad}` }), 'version');
  });
});

describe('POST /api/v1/fees/estimate', () => {
  it.each([
    [{ amount: '150.00', rail: 'BOLETO' }, { fee: '4.25', net_amount: '145.75', tier: 'BASIC', bound: null, proportional_part: '0.75' }],
    [{ amount: 150, rail: 'BOLETO', tier: 'STANDARD' }, { fee: '3.38', net_amount: '146.62', tier: 'STANDARD' }],
    [{ amount: '5000', rail: 'BOLETO' }, { fee: '15.00', bound: 'MAX' }],
    [{ amount: '0.01', rail: 'BOLETO' }, { fee: '0.01', net_amount: '0.00', bound: 'AMOUNT' }],
    [{ amount: '25.00', rail: 'PIX' }, { fee: '0.00', net_amount: '25.00', consent_required: false }],
    [{ amount: '100.00', rail: 'BOLETO', tier: 'PREMIUM', currency: 'USD' }, { fee: '2.00', currency: 'USD', rule: { tier: 'PREMIUM' } }],
  ])('%j -> %j', async (payload, expected) => {
    const response = await estimate(payload);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ schedule_version: 1, ...expected });
  });

  it("with an owner: its tier (STANDARD, where every owner starts, when it has no reputation yet), no consent, consent_required when the fee is not zero; records nothing", async () => {
    const before = await rowCounts();
    const owner = newWallet().pubkey;
    const response = await estimate({ amount: '150.00', rail: 'BOLETO', owner_id: owner });
    expect(response.json()).toMatchObject({ owner_id: owner, tier: 'STANDARD', fee: '3.38', consented_version: null, consent_required: true });
    expect(await rowCounts()).toEqual(before);
  });

  it.each([
    [{ amount: '0', rail: 'PIX' }, 'amount'],
    [{ amount: '-1.00', rail: 'PIX' }, 'amount'],
    [{ amount: '1.001', rail: 'PIX' }, 'amount'],
    [{ amount: '1e3', rail: 'PIX' }, 'amount'],
    [{ amount: '99999999999999999999999', rail: 'PIX' }, 'amount'],
    [{ amount: 'NaN', rail: 'PIX' }, 'amount'],
    [{ amount: '1.00' }, 'rail'],
    [{ amount: '1.00', rail: 'PIX', tier: 'DIAMOND' }, 'tier'],
    [{ amount: '1.00', rail: 'PIX', currency: 'JPY' }, 'currency'],
    [{ amount: '1.00', rail: 'PIX', owner_id: 'a:b' }, 'owner_id'],
    [{ amount: '1.00', rail: 'PIX', schedule_version: 0 }, 'schedule_version'],
    [{ amount: '1.00', rail: 'PIX', surprise: true }, 'surprise'],
  ])('refuses %j (422 at %s)', async (payload, field) => {
    const response = await estimate(payload);
    if (field === 'surprise') expect(response.statusCode).toBe(422);
    else expect422(response, field);
  });

  it('one rail vocabulary: pix and boleto, PIX and BOLETO read as those, answered as pix and boleto; any other rail is 422 UNSUPPORTED_RAIL', async () => {
    for (const [rail, answered] of [['pix', 'pix'], ['PIX', 'pix'], ['boleto', 'boleto'], ['BOLETO', 'boleto']]) {
      const response = await estimate({ amount: '150.00', rail });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ rail: answered, rule: { rail: answered } });
    }
    for (const rail of ['ted', 'TED', 'Pix', 'pix ', '']) {
      const response = await estimate({ amount: '1.00', rail });
      expect(response.statusCode).toBe(422);
      expect(response.json().detail[0]).toMatchObject({ loc: ['body', 'rail'], type: rail === '' ? expect.any(String) : 'UNSUPPORTED_RAIL' });
    }
  });

  it('an unknown schedule version is a 404', async () => {
    const response = await estimate({ amount: '1.00', rail: 'PIX', schedule_version: 42 });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ code: 'FEE_SCHEDULE_VERSION_UNKNOWN' });
  });
});

describe('POST /api/v1/fees/consent', () => {
  it('records a signed consent once: the same consent again answers the first, with its time and device', async () => {
    const owner = newWallet();
    const first = await post('/consent', feeConsentBody(owner, 1, { deviceId: 'phone-1' }));
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ owner_id: owner.pubkey, schedule_version: 1, device_id: 'phone-1', created: true, in_force: true });
    const again = await post('/consent', feeConsentBody(owner, 1, { deviceId: 'tablet-2' }));
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ device_id: 'phone-1', created: false, consented_at: first.json().consented_at });
    const stored = await t.db.pool.query('SELECT device_id, signed_at_ms FROM fee_consents WHERE owner_id = $1', [owner.pubkey]);
    expect(stored.rows).toHaveLength(1);
    // The estimate now names the consent.
    const priced = await estimate({ amount: '150.00', rail: 'BOLETO', owner_id: owner.pubkey });
    expect(priced.json()).toMatchObject({ consented_version: 1, consent_required: false, fee: '3.38' });
  });

  it('concurrent identical consents record one', async () => {
    const owner = newWallet();
    const body = feeConsentBody(owner, 1);
    const answers = await Promise.all(Array.from({ length: 8 }, () => post('/consent', body)));
    expect(answers.map((answer) => answer.statusCode)).toEqual(Array(8).fill(200));
    expect(answers.filter((answer) => answer.json().created)).toHaveLength(1);
  });

  it('refuses a bad signature, another key, a stale or future time, a malformed field; records nothing', async () => {
    const owner = newWallet();
    const other = newWallet();
    const before = await rowCounts();
    const good = feeConsentBody(owner, 1);
    const cases: [Record<string, unknown>, number, string][] = [
      [{ ...good, device_signature: '00'.repeat(64) }, 422, 'device_signature'],
      [{ ...good, public_key: other.pubkey }, 422, 'device_signature'],
      [{ ...good, device_id: 'phone-2' }, 422, 'device_signature'],
      [feeConsentBody(owner, 1, { timestampMs: Date.now() - toleranceMs - 60_000 }), 422, 'operation_timestamp'],
      [feeConsentBody(owner, 1, { timestampMs: Date.now() + toleranceMs + 60_000 }), 422, 'operation_timestamp'],
      [{ ...good, public_key: 'zz' }, 422, 'public_key'],
      [{ ...good, device_id: 'a:b' }, 422, 'device_id'],
      [{ ...good, schedule_version: 'one' }, 422, 'schedule_version'],
      [{ ...good, operation_timestamp: 1.5 }, 422, 'operation_timestamp'],
    ];
    for (const [payload, status, field] of cases) {
      const response = await post('/consent', payload);
      expect(response.statusCode, JSON.stringify(payload)).toBe(status);
      expect422(response, field);
    }
    const signatureInvalid = await post('/consent', { ...good, device_signature: '00'.repeat(64) });
    expect(signatureInvalid.json().detail[0].type).toBe('SIGNATURE_INVALID');
    expect(await rowCounts()).toEqual(before);
  });

  it('refuses an unknown version with 404 FEE_SCHEDULE_VERSION_UNKNOWN', async () => {
    const response = await post('/consent', feeConsentBody(newWallet(), 7));
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ code: 'FEE_SCHEDULE_VERSION_UNKNOWN', details: { schedule_version: 7 } });
  });
});

describe('POST /api/v1/fees/b2b/quote', () => {
  it('prices every plan for a volume, stores the quote with its validity, names the cheapest', async () => {
    const response = await post('/b2b/quote', { monthly_volume: 25_000, average_amount: '42.50' });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.plans).toEqual([
      { plan: 'STARTER', name: 'Starter', available: false, reason: expect.stringContaining('2000'), monthly_fee: '0.00', band: null, per_redemption: null, usage: null, total_monthly: null },
      {
        plan: 'BUSINESS',
        name: 'Business',
        available: true,
        reason: null,
        monthly_fee: '199.00',
        band: { from_monthly_count: 10_000, fixed: '0.06', rate_bps: 45 },
        per_redemption: '0.25',
        usage: '6250.00',
        total_monthly: '6449.00',
      },
      {
        plan: 'ENTERPRISE',
        name: 'Enterprise',
        available: true,
        reason: null,
        monthly_fee: '999.00',
        band: { from_monthly_count: 0, fixed: '0.05', rate_bps: 40 },
        per_redemption: '0.22',
        usage: '5500.00',
        total_monthly: '6499.00',
      },
    ]);
    expect(body.cheapest_plan).toBe('BUSINESS');
    const days = (Date.parse(body.valid_until) - Date.parse(body.created_at)) / 86_400_000;
    expect(days).toBe(30);
    const stored = await t.db.pool.query('SELECT monthly_count, average_amount_minor, quote FROM b2b_quotes WHERE id = $1', [body.quote_id]);
    expect(stored.rows[0]).toMatchObject({ monthly_count: 25_000, average_amount_minor: 4250n });
    expect(stored.rows[0].quote.plans).toEqual(body.plans);
  });

  it('one plan when asked', async () => {
    const response = await post('/b2b/quote', { monthly_volume: 100, average_amount: 10, plan: 'STARTER' });
    expect(response.json()).toMatchObject({ plans: [{ plan: 'STARTER', per_redemption: '0.18', total_monthly: '18.00' }], cheapest_plan: 'STARTER' });
  });

  it.each([
    [{ monthly_volume: 0, average_amount: '1.00' }, 'monthly_volume'],
    [{ monthly_volume: 100_000_001, average_amount: '1.00' }, 'monthly_volume'],
    [{ monthly_volume: 1.5, average_amount: '1.00' }, 'monthly_volume'],
    [{ monthly_volume: 10, average_amount: '0.00' }, 'average_amount'],
    [{ monthly_volume: 10, average_amount: '1.234' }, 'average_amount'],
    [{ monthly_volume: 10, average_amount: '-3' }, 'average_amount'],
    [{ monthly_volume: 10, average_amount: '1.00', plan: 'GOLD' }, 'plan'],
  ])('refuses %j (422 at %s), storing nothing', async (payload, field) => {
    const before = await rowCounts();
    expect422(await post('/b2b/quote', payload), field);
    expect(await rowCounts()).toEqual(before);
  });
});

describe('a new version', () => {
  it('never changes an earlier one: rules and versions cannot be updated or deleted, nor a consented version extended', async () => {
    await expect(t.db.pool.query("UPDATE fee_rules SET fixed_minor = 1 WHERE version = 1 AND rail = 'PIX'")).rejects.toThrow(/immutable/);
    await expect(t.db.pool.query('DELETE FROM fee_rules WHERE version = 1')).rejects.toThrow(/immutable/);
    await expect(t.db.pool.query("UPDATE fee_schedule_versions SET description = 'x' WHERE version = 1")).rejects.toThrow(/immutable/);
    await expect(
      t.db.pool.query("INSERT INTO fee_rules (version, rail, tier, fixed_minor, rate_bps, min_minor) VALUES (1, 'PIX', 'TRUSTED', 1, 0, 0)"),
    ).rejects.toThrow(/has consents/);
  });

  it('becomes current; consents to version 1 keep its prices; a first consent to version 1 is refused as superseded', async () => {
    const early = newWallet();
    expect((await post('/consent', feeConsentBody(early, 1))).statusCode).toBe(200);
    const version = await publishFeeSchedule(t.db.pool, {
      description: 'Pix charged: 1% for Basic',
      rules: [
        { rail: 'PIX', tier: null, fixedMinor: 0n, rateBps: 100, minMinor: 10n, maxMinor: 500n },
        { rail: 'BOLETO', tier: null, fixedMinor: 400n, rateBps: 0, minMinor: 0n, maxMinor: null },
      ],
    });
    expect(version).toBe(2);
    const schedule = (await t.app.inject({ method: 'GET', url: '/api/v1/fees/schedule' })).json();
    expect(schedule).toMatchObject({ version: 2, current_version: 2, versions: [{ version: 2 }, { version: 1 }] });
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/fees/schedule?version=1' })).json()).toMatchObject({ version: 1, current_version: 2 });

    // The early owner is still priced by version 1 (Pix free); a new owner by version 2.
    expect((await estimate({ amount: '25.00', rail: 'PIX', owner_id: early.pubkey })).json()).toMatchObject({ schedule_version: 1, fee: '0.00', consent_required: false });
    const late = newWallet();
    expect((await estimate({ amount: '25.00', rail: 'PIX', owner_id: late.pubkey })).json()).toMatchObject({
      schedule_version: 2,
      fee: '0.25',
      net_amount: '24.75',
      consent_required: true,
    });

    const superseded = await post('/consent', feeConsentBody(late, 1));
    expect(superseded.statusCode).toBe(409);
    expect(superseded.json()).toMatchObject({ code: 'FEE_SCHEDULE_SUPERSEDED', details: { schedule_version: 1, current_version: 2 } });
    // The early owner's consent to 1 is answered as it was, superseded or not.
    expect((await post('/consent', feeConsentBody(early, 1))).json()).toMatchObject({ created: false, in_force: true });
    // Consenting to 2 moves the early owner to version 2.
    expect((await post('/consent', feeConsentBody(early, 2))).json()).toMatchObject({ created: true, in_force: true });
    expect((await estimate({ amount: '25.00', rail: 'PIX', owner_id: early.pubkey })).json()).toMatchObject({ schedule_version: 2, consented_version: 2, fee: '0.25' });
    expect((await post('/consent', feeConsentBody(early, 1))).json()).toMatchObject({ created: false, in_force: false });
  });

  it('publishFeeSchedule refuses malformed rules and writes nothing', async () => {
    const before = await rowCounts();
    await expect(
      publishFeeSchedule(t.db.pool, { description: 'bad', rules: [{ rail: 'PIX', tier: null, fixedMinor: 0n, rateBps: 20_000, minMinor: 0n, maxMinor: null }] }),
    ).rejects.toThrow(/rate_bps/);
    expect(await rowCounts()).toEqual(before);
  });
});
