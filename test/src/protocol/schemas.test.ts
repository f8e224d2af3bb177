/** The JSON form: its exact shape, strictness on every field, and the round trip. */
import { describe, expect, it } from 'vitest';
import { parsePlcJson, plcJsonSchema, plcToJson, verifyPlc, type PlcJson } from '../../../src/protocol/index.ts';
import { alternatingHolders, chainThrough } from './support.ts';

const plc = chainThrough([1, 2]);
const json = plcToJson(plc);

function changed(change: (copy: Record<string, unknown> & { transfer_chain: Record<string, unknown>[] }) => void): unknown {
  const copy = structuredClone(json) as unknown as Record<string, unknown> & { transfer_chain: Record<string, unknown>[] };
  change(copy);
  return copy;
}

describe('PLC JSON form', () => {
  it('has exactly the documented keys, snake_case, with string values', () => {
    expect(Object.keys(json)).toEqual([
      'version',
      'token_id',
      'issuer_pubkey',
      'amount',
      'currency',
      'created_at',
      'expires_at',
      'nonce',
      'commitment_hash',
      'signature',
      'transfer_chain',
    ]);
    expect(Object.keys(json.transfer_chain[0]!)).toEqual(['sender_pubkey', 'recipient_pubkey', 'timestamp', 'nonce', 'prev_hash', 'signature', 'hash']);
    expect(json).toMatchObject({ version: '2.0', amount: '12.34', currency: 'BRL', created_at: '2026-11-22T10:00:00.000Z', expires_at: '2026-11-23T10:00:00.000Z' });
  });

  it('round-trips through JSON text to the same PLC, which verifies', () => {
    const parsed = parsePlcJson(JSON.parse(JSON.stringify(json)));
    expect(parsed).toEqual(plc);
    expect(verifyPlc(parsed).ok).toBe(true);
  });

  it('accepts 32 records and refuses 33', () => {
    const long = plcToJson(chainThrough(alternatingHolders(32)));
    expect(plcJsonSchema.safeParse(long).success).toBe(true);
    const tooLong = { ...long, transfer_chain: [...long.transfer_chain, long.transfer_chain[0]!] };
    expect(plcJsonSchema.safeParse(tooLong).success).toBe(false);
  });

  const refusals: [string, unknown][] = [
    ['not an object', 'PLC2:...'],
    ['an unknown top-level key', changed((c) => (c.status = 'ISSUED'))],
    ['an unknown record key', changed((c) => (c.transfer_chain[0]!.extra = 1))],
    ['a missing key', changed((c) => delete c.nonce)],
    ['version 2', changed((c) => (c.version = '2'))],
    ['version as a number', changed((c) => (c.version = 2.0))],
    ['an upper-case token id', changed((c) => (c.token_id = (c.token_id as string).toUpperCase()))],
    ['a UUID v1 token id', changed((c) => (c.token_id = '4f0c2b1e-7d3a-1c5b-9e8f-0a1b2c3d4e5f'))],
    ['upper-case hex in a key', changed((c) => (c.issuer_pubkey = (c.issuer_pubkey as string).toUpperCase()))],
    ['a 31-byte key', changed((c) => (c.issuer_pubkey = (c.issuer_pubkey as string).slice(2)))],
    ['a 0x-prefixed hash', changed((c) => (c.commitment_hash = `0x${(c.commitment_hash as string).slice(2)}`))],
    ['a 63-byte signature', changed((c) => (c.transfer_chain[1]!.signature = (c.transfer_chain[1]!.signature as string).slice(2)))],
    ['amount as a number', changed((c) => (c.amount = 12.34))],
    ['amount with one decimal', changed((c) => (c.amount = '12.3'))],
    ['amount with three decimals', changed((c) => (c.amount = '12.340'))],
    ['amount without decimals', changed((c) => (c.amount = '12'))],
    ['amount with a leading zero', changed((c) => (c.amount = '012.34'))],
    ['amount negative', changed((c) => (c.amount = '-12.34'))],
    ['amount in exponent form', changed((c) => (c.amount = '1.234e1'))],
    ['amount zero', changed((c) => (c.amount = '0.00'))],
    ['amount over 10^15 minor units', changed((c) => (c.amount = '10000000000000.01'))],
    ['currency GBP', changed((c) => (c.currency = 'GBP'))],
    ['currency in lower case', changed((c) => (c.currency = 'brl'))],
    ['a timestamp without milliseconds', changed((c) => (c.created_at = '2026-11-22T10:00:00Z'))],
    ['a timestamp with an offset', changed((c) => (c.created_at = '2026-11-22T10:00:00.000+00:00'))],
    ['a calendar-invalid timestamp', changed((c) => (c.expires_at = '2026-02-30T10:00:00.000Z'))],
    ['a timestamp as milliseconds', changed((c) => (c.transfer_chain[0]!.timestamp = 1795345200000))],
    ['a record as an array', changed((c) => (c.transfer_chain[0] = [] as never))],
  ];

  it.each(refusals)('refuses %s with invalid_json', (_, input) => {
    expect(plcJsonSchema.safeParse(input).success).toBe(false);
    expect(() => parsePlcJson(input)).toThrow(expect.objectContaining({ code: 'invalid_json' }));
  });

  it('lists every issue with its path', () => {
    try {
      parsePlcJson(changed((c) => {
        c.amount = '12.3';
        c.transfer_chain[1]!.nonce = 'zz';
      }));
      expect.unreachable();
    } catch (error) {
      const issues = (error as { detail: { issues: { path: string }[] } }).detail.issues.map((issue) => issue.path);
      expect(issues).toEqual(expect.arrayContaining(['amount', 'transfer_chain.1.nonce']));
    }
  });

  it('types the result as PlcJson', () => {
    const typed: PlcJson = plcJsonSchema.parse(json);
    expect(typed.transfer_chain).toHaveLength(2);
  });
});
