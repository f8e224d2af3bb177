/**
 * The ledger's idempotency keys (src/ledger/keys.ts): the key a booking is made under and the SQL
 * that looks it up are the same text, and the one copy outside the module (the `plc_issue`
 * database function of a migration, never edited) spells the same key.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { depositLedgerKey, ledgerKeys } from '../../src/ledger/keys.ts';

describe('ledger idempotency keys', () => {
  it('are <area>:<id>:<event>, each event once', () => {
    const id = '6f0d3b9e-1a2b-4c3d-8e9f-0a1b2c3d4e5f';
    expect(Object.values(ledgerKeys).map((key) => key.of(id))).toEqual([
      `plc:${id}:issue`,
      `plc:${id}:release`,
      `redemption:${id}:request`,
      `redemption:${id}:settle`,
      `redemption:${id}:fail`,
      `charge:${id}:created`,
      `charge:${id}:settle`,
      `charge:${id}:fail`,
      `plc-evidence:${id}:compensate`,
    ]);
    expect(depositLedgerKey('k-1')).toBe('deposit:k-1');
  });

  it('build the same key in SQL from a column', () => {
    for (const key of Object.values(ledgerKeys)) {
      const [area, , event] = key.of('ID').split(':');
      expect(key.sql('r.id')).toBe(`'${area}:' || r.id || ':${event}'`);
    }
  });

  it("match the plc_issue function's own spelling of the issue key (migration 11)", () => {
    const migration = readFileSync(new URL('../../migrations/11_plc_issue.sql', import.meta.url), 'utf8');
    expect(migration).toContain(ledgerKeys.plcIssue.sql('p_token_id::text'));
  });
});
