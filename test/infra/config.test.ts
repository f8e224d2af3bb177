import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, secretConfigKeys } from '../../infra/config.ts';
import { bytesToHex, developmentBlocklistSeed } from '../../src/protocol/index.ts';

const base = { APP_ENV: 'test', LOG_LEVEL: 'silent' };

describe('configuration: the transfer route throughput settings', () => {
  it('has defaults that leave pool connections beside the group commits', () => {
    const config = loadConfig(base);
    expect(config.GROUP_COMMIT_IN_FLIGHT).toBe(4);
    expect(2 * config.GROUP_COMMIT_IN_FLIGHT).toBeLessThan(config.DATABASE_POOL_MAX);
    expect(config.PLC_CHAIN_MEMO_MAX).toBe(20_000);
    expect(config.PLC_STATUS_YIELD_UTILIZATION).toBe(0.7);
    expect(config.PLC_STATUS_BUSY_PER_SECOND).toBe(2);
  });

  it('refuses group commits that could hold every pool connection, naming both settings', () => {
    expect(() => loadConfig({ ...base, GROUP_COMMIT_IN_FLIGHT: '5' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, GROUP_COMMIT_IN_FLIGHT: '5' })).toThrow(/GROUP_COMMIT_IN_FLIGHT.*DATABASE_POOL_MAX \(10\)/);
    expect(loadConfig({ ...base, GROUP_COMMIT_IN_FLIGHT: '5', DATABASE_POOL_MAX: '11' }).GROUP_COMMIT_IN_FLIGHT).toBe(5);
  });

  it('refuses a yield threshold outside 0 to 1 and a memo size below 0', () => {
    expect(() => loadConfig({ ...base, PLC_STATUS_YIELD_UTILIZATION: '1.5' })).toThrow(/PLC_STATUS_YIELD_UTILIZATION/);
    expect(() => loadConfig({ ...base, PLC_CHAIN_MEMO_MAX: '-1' })).toThrow(/PLC_CHAIN_MEMO_MAX/);
    expect(loadConfig({ ...base, PLC_CHAIN_MEMO_MAX: '0' }).PLC_CHAIN_MEMO_MAX).toBe(0);
  });
});

describe("configuration: the worker's sticky cache", () => {
  it("is the SDK's default when unset or empty, 0 turns it off, and a fraction or a negative is refused", () => {
    expect(loadConfig(base).TEMPORAL_MAX_CACHED_WORKFLOWS).toBeUndefined();
    expect(loadConfig({ ...base, TEMPORAL_MAX_CACHED_WORKFLOWS: '' }).TEMPORAL_MAX_CACHED_WORKFLOWS).toBeUndefined();
    expect(loadConfig({ ...base, TEMPORAL_MAX_CACHED_WORKFLOWS: '0' }).TEMPORAL_MAX_CACHED_WORKFLOWS).toBe(0);
    expect(loadConfig({ ...base, TEMPORAL_MAX_CACHED_WORKFLOWS: '200' }).TEMPORAL_MAX_CACHED_WORKFLOWS).toBe(200);
    expect(() => loadConfig({ ...base, TEMPORAL_MAX_CACHED_WORKFLOWS: '1.5' })).toThrow(/TEMPORAL_MAX_CACHED_WORKFLOWS/);
    expect(() => loadConfig({ ...base, TEMPORAL_MAX_CACHED_WORKFLOWS: '-1' })).toThrow(/TEMPORAL_MAX_CACHED_WORKFLOWS/);
  });
});

describe('BLOCKLIST_SIGNING_SEED', () => {
  const production = {
    APP_ENV: 'production',
    DATABASE_URL: 'postgres://x@127.0.0.1/x',
    TEMPORAL_ADDRESS: '127.0.0.1:7233',
    JWT_SECRET: 'j'.repeat(32),
    PIN_PEPPER: 'p'.repeat(32),
    GATEWAY_API_KEY: 'real-key',
    GATEWAY_WEBHOOK_TOKEN: 'real-webhook-token',
  };

  it('is optional outside production (the development seed), 64 hex digits, kept lowercase', () => {
    expect(loadConfig(base).BLOCKLIST_SIGNING_SEED).toBeUndefined();
    expect(loadConfig({ ...base, BLOCKLIST_SIGNING_SEED: 'AB'.repeat(32) }).BLOCKLIST_SIGNING_SEED).toBe('ab'.repeat(32));
    expect(() => loadConfig({ ...base, BLOCKLIST_SIGNING_SEED: 'ab'.repeat(31) })).toThrow(/BLOCKLIST_SIGNING_SEED: must be 64 hex digits/);
  });

  it('is required in production, and the published development seed is refused there', () => {
    expect(() => loadConfig(production)).toThrow(/BLOCKLIST_SIGNING_SEED: is required when APP_ENV=production/);
    expect(() => loadConfig({ ...production, BLOCKLIST_SIGNING_SEED: bytesToHex(developmentBlocklistSeed) })).toThrow(/published development seed/);
    expect(loadConfig({ ...production, BLOCKLIST_SIGNING_SEED: 'c'.repeat(64) }).BLOCKLIST_SIGNING_SEED).toBe('c'.repeat(64));
    expect(secretConfigKeys).toContain('BLOCKLIST_SIGNING_SEED');
  });
});

describe('the issue receipt keys (docs/protocol.md 19.4)', () => {
  const key = 'ab'.repeat(32);
  it('RECEIPT_KEYS_RETIRED: <64 hex>:<from>:<until> entries, comma-separated, each key once, from <= until', () => {
    expect(loadConfig(base).RECEIPT_KEYS_RETIRED).toBeUndefined();
    expect(loadConfig({ ...base, RECEIPT_KEYS_RETIRED: ' ' }).RECEIPT_KEYS_RETIRED).toEqual([]);
    expect(loadConfig({ ...base, RECEIPT_KEYS_RETIRED: `${key}:0:1795341600000, ${'cd'.repeat(32)}:5:5` }).RECEIPT_KEYS_RETIRED).toEqual([
      { pubkey: key, validFromMs: 0, validUntilMs: 1795341600000 },
      { pubkey: 'cd'.repeat(32), validFromMs: 5, validUntilMs: 5 },
    ]);
    for (const bad of [`${key}:2:1`, `${key}:0`, `${key.toUpperCase()}:0:1`, `${key}:0:1,${key}:2:3`, `${key}:0:253402300800000`]) {
      expect(() => loadConfig({ ...base, RECEIPT_KEYS_RETIRED: bad }), bad).toThrow(/RECEIPT_KEYS_RETIRED/);
    }
  });

  it('RECEIPT_SIGNING_SEED: 64 hex digits, secret, and not the development seed in production', () => {
    expect(loadConfig({ ...base, RECEIPT_SIGNING_SEED: 'AB'.repeat(32), RECEIPT_KEY_VALID_FROM_MS: '1795341600000' })).toMatchObject({
      RECEIPT_SIGNING_SEED: 'ab'.repeat(32),
      RECEIPT_KEY_VALID_FROM_MS: 1795341600000,
    });
    expect(() => loadConfig({ ...base, RECEIPT_SIGNING_SEED: 'ab' })).toThrow(/RECEIPT_SIGNING_SEED/);
    expect(secretConfigKeys).toContain('RECEIPT_SIGNING_SEED');
    const production = {
      APP_ENV: 'production',
      DATABASE_URL: 'postgres://x@127.0.0.1/x',
      TEMPORAL_ADDRESS: '127.0.0.1:7233',
      JWT_SECRET: 'j'.repeat(32),
      PIN_PEPPER: 'p'.repeat(32),
      GATEWAY_API_KEY: 'real-key',
      GATEWAY_WEBHOOK_TOKEN: 'real-webhook-token',
      BLOCKLIST_SIGNING_SEED: 'c'.repeat(64),
    };
    expect(() => loadConfig({ ...production, RECEIPT_SIGNING_SEED: bytesToHex(developmentBlocklistSeed) })).toThrow(/RECEIPT_SIGNING_SEED: is the published development seed/);
  });
});
