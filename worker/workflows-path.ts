import { fileURLToPath } from 'node:url';

/** The workflows' entry module, bundled by the worker (or once per test run). */
export const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));
