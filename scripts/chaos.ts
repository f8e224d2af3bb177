import { randomInt } from 'node:crypto';
import { parseArgs } from 'node:util';
import { formatTable, runChaos } from './chaos/campaign.ts';

/**
 * `npm run chaos [-- --seed N] [--short] [--ports BASE|free] [--only 'part,part']`: the chaos campaign against a
 * service it starts (embedded PostgreSQL, a Temporal dev server, the gateway simulator, the API
 * and the worker; scripts/chaos/stack.ts), by default on ports from 18000 so that it never meets
 * a test or `npm start`. Prints its seed first and a table of counts at the end; exits 1 when an
 * invariant was violated (each is printed), 2 when the campaign could not run. docs/reliability.md
 * says what it proves and records its last figures.
 */
const { values } = parseArgs({
  options: {
    seed: { type: 'string' },
    short: { type: 'boolean', default: false },
    ports: { type: 'string', default: '18000' },
    only: { type: 'string' },
  },
});

const seed = values.seed === undefined ? randomInt(0, 2 ** 32 - 1) : Number(values.seed);
const ports = values.ports === 'free' ? 'free' : Number(values.ports);
if (!Number.isInteger(seed) || seed < 0 || seed >= 2 ** 32 || (ports !== 'free' && (!Number.isInteger(ports) || ports < 1024 || ports > 65_000))) {
  process.stderr.write("usage: npm run chaos -- [--seed 0..4294967295] [--short] [--ports BASE|free] [--only 'part,part']\n");
  process.exit(2);
}

const started = new Date();
try {
  const result = await runChaos({
    seed,
    short: values.short,
    ports,
    ...(values.only === undefined ? {} : { only: values.only.split(',').map((name) => name.trim()) }),
    log: (line) => process.stdout.write(`[chaos] ${line}\n`),
  });
  process.stdout.write(`\n${formatTable(result)}\n\nseed ${result.seed}${result.short ? ' (short)' : ''}, started ${started.toISOString()}\n`);
  if (result.violations.length > 0) {
    process.stdout.write(`${result.violations.length} violations:\n${result.violations.map((v) => `  ${v}`).join('\n')}\n`);
    process.exit(1);
  }
  process.stdout.write('no violations\n');
  process.exit(0);
} catch (error) {
  process.stderr.write(`chaos: the campaign could not run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(2);
}
