import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { customSearchAttributes } from './search-attributes.ts';

/**
 * The settings and ports of `npm run start:cluster` (scripts/cluster.ts), from its environment:
 *
 * - CLUSTER_DATA_DIR: its data folder (default `.data/cluster`, apart from `npm start`'s `.data`).
 * - CLUSTER_PORT_BASE: every port is this plus a fixed offset (default 18400; see `clusterPorts`),
 *   so that the cluster never meets `npm start` (8000, 5433, 7233), the tests or the chaos campaign (18000).
 * - CLUSTER_POSTGRES_URL: a PostgreSQL server to use instead of the embedded one, by a role that
 *   may create roles and databases; the ledger goes in CLUSTER_LEDGER_DATABASE (default `settlement`),
 *   Temporal's state in `temporal` and `temporal_visibility` owned by a `temporal` role.
 * - CLUSTER_UI=0: no Temporal UI.
 */

export class ClusterConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClusterConfigError';
  }
}

export interface ClusterSettings {
  dataDir: string;
  portBase: number;
  postgresUrl: string | null;
  ledgerDatabase: string;
  ui: boolean;
}

export function loadClusterSettings(env: Record<string, string | undefined>, root: string): ClusterSettings {
  const problems: string[] = [];
  const base = Number(env.CLUSTER_PORT_BASE ?? '18400');
  if (!Number.isInteger(base) || base < 1024 || base > 65_535 - portSpan) problems.push(`CLUSTER_PORT_BASE must be an integer from 1024 to ${65_535 - portSpan} (got ${String(env.CLUSTER_PORT_BASE)})`);
  const postgresUrl = env.CLUSTER_POSTGRES_URL === undefined || env.CLUSTER_POSTGRES_URL === '' ? null : env.CLUSTER_POSTGRES_URL;
  if (postgresUrl !== null) {
    try {
      const url = new URL(postgresUrl);
      if (!['postgres:', 'postgresql:'].includes(url.protocol)) problems.push(`CLUSTER_POSTGRES_URL must be a postgres:// URL (got ${url.protocol})`);
    } catch {
      problems.push('CLUSTER_POSTGRES_URL is not a URL');
    }
  }
  const ledgerDatabase = env.CLUSTER_LEDGER_DATABASE ?? 'settlement';
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(ledgerDatabase)) problems.push(`CLUSTER_LEDGER_DATABASE must be a plain lower-case database name (got ${ledgerDatabase})`);
  const ui = env.CLUSTER_UI ?? '1';
  if (!['0', '1'].includes(ui)) problems.push(`CLUSTER_UI must be 0 or 1 (got ${ui})`);
  if (problems.length > 0) throw new ClusterConfigError(`start:cluster: ${problems.join('; ')}`);
  return {
    dataDir: path.resolve(root, env.CLUSTER_DATA_DIR ?? '.data/cluster'),
    portBase: base,
    postgresUrl,
    ledgerDatabase,
    ui: ui === '1',
  };
}

export interface ClusterPorts {
  loadBalancer: number;
  api: readonly [number, number];
  simulator: number;
  smtp: number;
  postgres: number;
  frontend: number;
  frontendHttp: number;
  history: number;
  matching: number;
  internalWorker: number;
  membership: { frontend: number; history: number; matching: number; worker: number };
  metrics: { frontend: number; history: number; matching: number; worker: number };
  ui: number;
}

/** Every port the cluster listens on lies in [base, base + portSpan). */
export const portSpan = 50;

export function clusterPorts(base: number): ClusterPorts {
  return {
    loadBalancer: base,
    api: [base + 1, base + 2],
    simulator: base + 5,
    smtp: base + 6,
    postgres: base + 7,
    frontend: base + 10,
    frontendHttp: base + 11,
    history: base + 12,
    matching: base + 13,
    internalWorker: base + 14,
    membership: { frontend: base + 20, history: base + 21, matching: base + 22, worker: base + 23 },
    metrics: { frontend: base + 30, history: base + 31, matching: base + 32, worker: base + 33 },
    ui: base + 40,
  };
}

const run = promisify(execFile);

/**
 * Registers the namespace (30 days' retention, as deploy/temporal/setup-namespace.sh) and the
 * search attributes the workflows set (infra/search-attributes.ts) through the frontend with the
 * Temporal CLI, then waits until the frontend lists them all. Idempotent.
 */
export async function registerNamespace(options: { cli: string; address: string; namespace: string; say: (line: string) => void }): Promise<void> {
  const temporal = (args: string[]) => run(options.cli, [...args, '--address', options.address], { timeout: 30_000 });
  const described = await temporal(['operator', 'namespace', 'describe', '--namespace', options.namespace]).then(
    () => true,
    () => false,
  );
  if (!described) {
    await temporal(['operator', 'namespace', 'create', '--namespace', options.namespace, '--retention', '720h']);
    options.say(`namespace ${options.namespace} registered (retention 30 days)`);
  }
  const deadline = Date.now() + 60_000;
  for (;;) {
    let listed: string[] = [];
    try {
      const { stdout } = await temporal(['operator', 'search-attribute', 'list', '--namespace', options.namespace, '--output', 'json']);
      listed = Object.keys((JSON.parse(stdout) as { customAttributes?: Record<string, unknown> }).customAttributes ?? {});
    } catch {
      // the namespace is not in every service's cache yet
    }
    const missing = Object.keys(customSearchAttributes).filter((name) => !listed.includes(name));
    if (missing.length === 0) break;
    if (Date.now() > deadline) throw new Error(`the search attributes ${missing.join(', ')} are still missing on namespace ${options.namespace} after 60 s`);
    for (const name of missing) {
      await temporal(['operator', 'search-attribute', 'create', '--namespace', options.namespace, '--name', name, '--type', customSearchAttributes[name as keyof typeof customSearchAttributes]]).catch(() => {});
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  options.say(`namespace ${options.namespace}: search attributes ${Object.keys(customSearchAttributes).join(', ')} registered`);
}
