// @ts-check
import tseslint from 'typescript-eslint';

const nodeBuiltins = [
  'assert', 'buffer', 'child_process', 'cluster', 'crypto', 'dgram', 'dns', 'events', 'fs', 'fs/promises', 'http', 'http2',
  'https', 'net', 'os', 'path', 'process', 'readline', 'stream', 'timers', 'tls', 'url', 'util', 'v8', 'vm', 'worker_threads', 'zlib',
];

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', '.dependency-cruiser.cjs', 'coverage/**', 'console/dist/**', 'wallet/dist/**', 'wallet/node_modules/**', 'eslint.config.js'] },
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      // scripts/*.mjs: plain JavaScript an older Node runs as it is (scripts/ed25519-openssl-verdicts.mjs), outside the TypeScript project.
      parserOptions: { projectService: { allowDefaultProject: ['scripts/*.mjs'] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      eqeqeq: 'error',
    },
  },
  {
    // Workflow code is replayed: it must be deterministic. No Node built-ins, no I/O, no driver,
    // and activities only as types (the worker runs them; the workflow only schedules them).
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBuiltins.flatMap((name) => [
              { name, message: 'workflows must be deterministic: no Node built-ins' },
              { name: `node:${name}`, message: 'workflows must be deterministic: no Node built-ins' },
            ]),
            { name: 'pg', message: 'workflows do no I/O: book through an activity' },
            { name: '@temporalio/client', message: 'workflows use @temporalio/workflow' },
            { name: '@temporalio/worker', message: 'workflows use @temporalio/workflow' },
          ],
          patterns: [
            { group: ['../activities/*', '../activities/**'], allowTypeImports: true, message: 'import activities as types only' },
            { group: ['../db/*', '../api/*', '../infra/*', '../worker/*'], message: 'workflows do no I/O' },
            {
              group: ['../gateway/*', '!../gateway/status.ts', '!../gateway/types.ts'],
              allowTypeImports: true,
              message: 'workflows use only the gateway vocabulary (status.ts, types.ts), never the client',
            },
          ],
        },
      ],
      'no-restricted-globals': ['error', 'setTimeout', 'setInterval', 'fetch', 'process', 'Buffer'],
      'no-restricted-properties': [
        'error',
        // The SDK makes Math.random and Date.now deterministic in workflows; ids still come from uuid4().
        { object: 'Math', property: 'random', message: 'use the workflow uuid4() or pass randomness in' },
      ],
    },
  },
  {
    // src/ is the pure domain: no framework, no driver, no Node built-ins.
    files: ['src/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.flatMap((name) => [
            { name, message: 'src/ is pure and isomorphic' },
            { name: `node:${name}`, message: 'src/ is pure and isomorphic' },
          ]),
          patterns: [
            { group: ['fastify', 'fastify-*', '@fastify/*', '@temporalio/*', 'pg', 'pino'], message: 'src/ is the pure domain' },
            { group: ['../../api/*', '../../db/*', '../../activities/*', '../../workflows/*', '../../infra/*'], message: 'src/ depends on nothing outside it' },
            {
              group: ['../../gateway/*', '!../../gateway/status.ts', '!../../gateway/types.ts'],
              message: "src/ uses only the gateway's pure vocabulary (status.ts, types.ts): what a gateway status means is decided there once",
            },
          ],
        },
      ],
    },
  },
);
