/** Command-line options of the benchmarks. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** An option's whole number from `min` (1 unless given) to `max`, or an error naming the option. */
export function positiveInt(name: string, text: string, max: number, min = 1): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`--${name} must be an integer from ${min} to ${max}, got "${text}"`);
  return value;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** The leading doc comment of a file, without its comment markers: what the benchmark does and how to run it. */
export function leadingDocComment(source: string): string {
  const match = /^\s*\/\*\*([\s\S]*?)\*\//.exec(source);
  if (match === null) return '';
  return match[1]!
    .split('\n')
    .map((line) => line.replace(/^\s*\* ?/, ''))
    .join('\n')
    .trim();
}

/** `--help` of a benchmark: its doc comment, then each option with its default. */
export function benchUsage(file: string, options: Options): string {
  const name = path.relative(process.cwd(), file) || file;
  const rows = [
    ...Object.entries(options).map(([option, spec]) => {
      const value = spec.type === 'string' ? ` ${option.endsWith('-s') ? 'SECONDS' : 'VALUE'}` : '';
      const fallback = spec.default === undefined || spec.default === false ? '' : `default ${String(spec.default)}`;
      return [`--${option}${value}`, fallback] as const;
    }),
    ['--help, -h', 'this text'] as const,
  ];
  const width = Math.max(...rows.map(([option]) => option.length));
  const lines = rows.map(([option, note]) => `  ${option.padEnd(width)}  ${note}`.trimEnd());
  return [`usage: node ${name} [options]`, '', leadingDocComment(readFileSync(file, 'utf8')), '', 'options:', ...lines].join('\n');
}

/**
 * node:util's parseArgs for a benchmark's options, with `--help` (`-h`): prints the benchmark's
 * doc comment and its options with their defaults, and exits 0 before anything starts. An unknown
 * option or a missing value prints the error and where to look, and exits 2, instead of a stack.
 * `moduleUrl` is the benchmark's `import.meta.url`.
 */
export function parseBenchArgs<T extends Options>(moduleUrl: string, config: { options: T; strict: true }) {
  const file = fileURLToPath(moduleUrl);
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${benchUsage(file, config.options)}\n`);
    process.exit(0);
  }
  try {
    return parseArgs({ options: config.options, strict: true, args: argv });
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n(node ${path.relative(process.cwd(), file)} --help lists the options)\n`);
    process.exit(2);
  }
}
