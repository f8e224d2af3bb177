import { defineConfig } from 'vitest/config';

/**
 * `npm run test:cluster`: the tests against `npm run start:cluster` (test/cluster/*.cluster.ts,
 * outside `npm test`'s pattern). One file at a time; the cluster test starts and stops its own
 * topology, on CLUSTER_TEST_PORT_BASE (default 18600) and a temporary data folder.
 */
export default defineConfig({
  test: {
    include: ['test/cluster/**/*.cluster.ts'],
    testTimeout: 300_000,
    hookTimeout: 960_000,
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    reporters: ['default'],
  },
});
