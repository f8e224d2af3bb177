import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

/**
 * Migration 13 rewrote the hex and digit CHECKs of migrations 4, 5 and 6 without bounded regular
 * expressions (they cost a quarter of a transfer append's backend CPU). Each new CHECK must accept
 * exactly what its old pattern accepted: here every constraint's own expression, as PostgreSQL
 * stores it, is evaluated on values around the boundary (lengths one off, uppercase, other
 * letters, non-ASCII, newlines) and compared with the old pattern.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ poolMax: 2 });
});
afterAll(async () => {
  await db?.drop();
});

/** Constraint name -> [column, the pattern it replaced]. */
const rewritten: Record<string, [string, RegExp]> = {
  plcs_issuer_pubkey_check: ['issuer_pubkey', /^[0-9a-f]{64}$/],
  plcs_nonce_check: ['nonce', /^[0-9a-f]{32}$/],
  plcs_commitment_hash_check: ['commitment_hash', /^[0-9a-f]{64}$/],
  plcs_signature_check: ['signature', /^[0-9a-f]{128}$/],
  plcs_head_hash_check: ['head_hash', /^[0-9a-f]{64}$/],
  plcs_bearer_pubkey_check: ['bearer_pubkey', /^[0-9a-f]{64}$/],
  plc_transfers_sender_pubkey_check: ['sender_pubkey', /^[0-9a-f]{64}$/],
  plc_transfers_recipient_pubkey_check: ['recipient_pubkey', /^[0-9a-f]{64}$/],
  plc_transfers_nonce_check: ['nonce', /^[0-9a-f]{32}$/],
  plc_transfers_prev_hash_check: ['prev_hash', /^[0-9a-f]{64}$/],
  plc_transfers_signature_check: ['signature', /^[0-9a-f]{128}$/],
  plc_transfers_record_hash_check: ['record_hash', /^[0-9a-f]{64}$/],
  redemptions_bearer_pubkey_check: ['bearer_pubkey', /^[0-9a-f]{64}$/],
  redemptions_head_hash_check: ['head_hash', /^[0-9a-f]{64}$/],
  charges_request_hash_check: ['request_hash', /^[0-9a-f]{64}$/],
  charges_payer_cpf_cnpj_check: ['payer_cpf_cnpj', /^([0-9]{11}|[0-9]{14})$/],
  charges_boleto_bar_code_check: ['boleto_bar_code', /^[0-9]{44}$/],
};

async function checkExpressions(): Promise<Map<string, string>> {
  const { rows } = await db.pool.query<{ conname: string; expression: string }>(
    `SELECT conname, pg_get_expr(conbin, conrelid) AS expression FROM pg_constraint WHERE contype = 'c' AND conname = ANY($1::text[])`,
    [Object.keys(rewritten)],
  );
  return new Map(rows.map((row) => [row.conname, row.expression]));
}

/** Would a row with this value in the column pass the CHECK? (NULL, like true, passes.) */
async function passes(expression: string, column: string, value: string | null): Promise<boolean> {
  const { rows } = await db.pool.query<{ ok: boolean | null }>(`SELECT (${expression}) AS ok FROM (VALUES ($1::text)) AS v(${column})`, [value]);
  return rows[0]?.ok !== false;
}

describe('hex and digit CHECKs (migration 13)', () => {
  it('exist, one per rewritten column, with no bounded repetition left', async () => {
    const expressions = await checkExpressions();
    expect([...expressions.keys()].sort()).toEqual(Object.keys(rewritten).sort());
    for (const expression of expressions.values()) expect(expression).not.toMatch(/\{\d/);
  });

  it('accept exactly what the old patterns accepted (property)', async () => {
    const expressions = await checkExpressions();
    const alphabet = fc.constantFrom(...'0123456789abcdefABCFgz-é\n '.split(''));
    for (const [name, [column, pattern]] of Object.entries(rewritten)) {
      const expression = expressions.get(name) as string;
      const length = Number(/\{(\d+)\}/.exec(pattern.source)?.[1] ?? 11);
      const value = fc.oneof(
        fc.string({ unit: alphabet, minLength: length - 1, maxLength: length + 1 }),
        // Mostly valid: one character changed, or a digit run of another allowed length.
        fc.tuple(fc.string({ unit: fc.constantFrom(...'0123456789'.split('')), minLength: length, maxLength: length }), fc.nat(length - 1), alphabet).map(
          ([digits, at, character]) => digits.slice(0, at) + character + digits.slice(at + 1),
        ),
        fc.constantFrom('0'.repeat(14), '1'.repeat(11), ''),
      );
      await fc.assert(
        fc.asyncProperty(value, async (candidate) => {
          expect(await passes(expression, column, candidate), `${name}: ${JSON.stringify(candidate)}`).toBe(pattern.test(candidate));
        }),
        { numRuns: 60 },
      );
      expect(await passes(expression, column, null)).toBe(true);
    }
  });

  it('refuse a bad value in a real row', async () => {
    await expect(
      db.pool.query(
        `INSERT INTO plc_transfers (token_id, position, sender_pubkey, recipient_pubkey, timestamp_ms, nonce, prev_hash, signature, record_hash, device_id)
         VALUES (gen_random_uuid(), 0, $1, $1, 0, $2, $1, $3, $4, 'd')`,
        ['a'.repeat(64), 'b'.repeat(32), 'c'.repeat(128), 'D'.repeat(64)],
      ),
    ).rejects.toMatchObject({ code: '23514', constraint: 'plc_transfers_record_hash_check' });
  });
});
