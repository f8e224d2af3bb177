import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../infra/config.ts';

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
