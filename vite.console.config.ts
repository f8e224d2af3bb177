import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/**
 * The web console (docs/operations-console.md, "The web console"): Preact components in
 * TypeScript, bundled by Vite into console/dist, which the API serves at /console. Built at
 * install time (`prepare`) and in CI; nothing is fetched at run time.
 */
export default defineConfig({
  root: fileURLToPath(new URL('./console/', import.meta.url)),
  base: '/console/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    target: 'es2022',
    // One small bundle: the console has a handful of screens.
    chunkSizeWarningLimit: 300,
  },
});
