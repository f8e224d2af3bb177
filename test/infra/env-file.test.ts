import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../infra/config.ts';
import { loadDotEnv } from '../../infra/env-file.ts';

const names = ['PLC_ENV_FILE_TEST_A', 'PLC_ENV_FILE_TEST_B', 'PLC_ENV_FILE_TEST_EMPTY'];
const dir = mkdtempSync(join(tmpdir(), 'env-file-'));

afterEach(() => {
  for (const name of names) delete process.env[name];
});

describe('.env', () => {
  it('is read into the environment, and a variable the environment sets wins over it', () => {
    const file = join(dir, '.env');
    writeFileSync(file, '# a comment\nPLC_ENV_FILE_TEST_A=from-file\nPLC_ENV_FILE_TEST_B="quoted value"\nPLC_ENV_FILE_TEST_EMPTY=\n');
    process.env.PLC_ENV_FILE_TEST_A = 'from-environment';
    const loaded = loadDotEnv(file);
    expect(loaded).toEqual({ file, names, overridden: ['PLC_ENV_FILE_TEST_A'] });
    expect(process.env.PLC_ENV_FILE_TEST_A).toBe('from-environment');
    expect(process.env.PLC_ENV_FILE_TEST_B).toBe('quoted value');
    expect(process.env.PLC_ENV_FILE_TEST_EMPTY).toBe('');
  });

  it('does nothing without a file', () => {
    expect(loadDotEnv(join(dir, 'missing.env'))).toBeNull();
  });

  it('an empty value, as .env.example writes them, counts as unset', () => {
    const config = loadConfig({ PORT: '', DATABASE_URL: '' });
    expect(config.PORT).toBe(8000);
    expect(config.DATABASE_URL).toBeUndefined();
  });

  it('.env.example parses as a .env, and names LOG_FORMAT', () => {
    const example = new URL('../../.env.example', import.meta.url).pathname;
    const before = { ...process.env };
    try {
      const loaded = loadDotEnv(example);
      expect(loaded?.names.length).toBeGreaterThan(20);
      expect(loaded?.names).toContain('LOG_FORMAT');
    } finally {
      for (const name of Object.keys(process.env)) if (!(name in before)) delete process.env[name];
    }
  });
});

process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
