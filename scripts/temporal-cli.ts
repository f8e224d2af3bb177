import { resolveTemporalCli, temporalCliHelp } from '../infra/temporal-cli.ts';

/**
 * `npm run temporal:cli`: finds the Temporal CLI, building it once into the tools cache when Go
 * is present, and prints its path. CI runs it before the tests so the one-time build shows its
 * progress on its own line rather than inside a test run.
 */
const cli = await resolveTemporalCli({
  configured: process.env.TEMPORAL_CLI || undefined,
  allowBuild: true,
  progress: (line) => process.stdout.write(`${line}\n`),
});
if (cli === null) {
  process.stderr.write(`${temporalCliHelp}\n`);
  process.exit(1);
}
process.stdout.write(`Temporal CLI (${cli.source}): ${cli.path}\n`);
