import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterConfigError, clusterPorts, loadClusterSettings, portSpan } from '../../infra/cluster.ts';
import { renderTemplate } from '../../infra/temporal-cluster.ts';

/** `npm run start:cluster`'s settings, ports and config templates (the topology itself: test/cluster, `npm run test:cluster`). */
const root = fileURLToPath(new URL('../../', import.meta.url));

describe('start:cluster settings', () => {
  it('defaults: its own data folder and ports from 18400, the embedded PostgreSQL, the UI', () => {
    expect(loadClusterSettings({}, root)).toEqual({ dataDir: path.join(root, '.data/cluster'), portBase: 18400, postgresUrl: null, ledgerDatabase: 'settlement', ui: true });
  });

  it('refuses bad values, naming each', () => {
    const refused = (env: Record<string, string>) => {
      try {
        loadClusterSettings(env, root);
      } catch (error) {
        expect(error).toBeInstanceOf(ClusterConfigError);
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refused({ CLUSTER_PORT_BASE: '80' })).toMatch(/CLUSTER_PORT_BASE must be an integer from 1024/);
    expect(refused({ CLUSTER_PORT_BASE: '65530' })).toMatch(/CLUSTER_PORT_BASE/);
    expect(refused({ CLUSTER_POSTGRES_URL: 'mysql://x@y/z' })).toMatch(/CLUSTER_POSTGRES_URL must be a postgres:\/\/ URL/);
    expect(refused({ CLUSTER_POSTGRES_URL: 'not a url' })).toMatch(/CLUSTER_POSTGRES_URL is not a URL/);
    expect(refused({ CLUSTER_LEDGER_DATABASE: 'Robert"; DROP' })).toMatch(/CLUSTER_LEDGER_DATABASE must be a plain lower-case database name/);
    expect(refused({ CLUSTER_UI: 'yes', CLUSTER_PORT_BASE: 'x' })).toMatch(/CLUSTER_PORT_BASE.*; CLUSTER_UI must be 0 or 1/);
  });

  it('gives every process a port of its own, inside [base, base + span)', () => {
    const ports = clusterPorts(20_000);
    const all = JSON.stringify(ports).match(/\d+/g)?.map(Number) ?? [];
    expect(all.length).toBeGreaterThan(15);
    expect(new Set(all).size).toBe(all.length);
    for (const port of all) {
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port).toBeLessThan(20_000 + portSpan);
    }
  });
});

describe('renderTemplate', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'render-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('fills every ${NAME} of the UI config, and refuses a placeholder without a value', async () => {
    const template = path.join(root, 'deploy/temporal/cluster/ui/cluster.yaml');
    const target = path.join(dir, 'out', 'cluster.yaml');
    await renderTemplate(template, target, { PLC_TEMPORAL_UI_FRONTEND: '127.0.0.1:1', PLC_TEMPORAL_UI_PORT: '2', PLC_TEMPORAL_UI_NAMESPACE: 'ns' });
    const text = await readFile(target, 'utf8');
    expect(text).toMatch(/^temporalGrpcAddress: "127\.0\.0\.1:1"$/m);
    expect(text).toMatch(/^port: 2$/m);
    expect(text).not.toMatch(/\$\{[A-Z]/);
    const partial = path.join(dir, 'partial.yaml');
    await writeFile(partial, 'a: ${ONE}\nb: ${TWO}\n');
    await expect(renderTemplate(partial, path.join(dir, 'never.yaml'), { ONE: '1' })).rejects.toThrow(/no value for TWO/);
  });
});
