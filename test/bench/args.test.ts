import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { leadingDocComment } from '../../bench/support/args.ts';

/**
 * Every benchmark answers --help (bench/support/args.ts, one parser for all): its doc comment and
 * its options with their defaults, exit 0, before anything starts; an unknown option exits 2 with
 * where to look, not a stack.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const benches: Record<string, readonly string[]> = {
  'bench/ledger.ts': ['--duration-s SECONDS', '--keep-database'],
  'bench/security.ts': ['--kdf-samples VALUE', '--warmup-s SECONDS'],
  'bench/protocol.ts': ['--parts VALUE', '--replica-rounds VALUE'],
  'bench/settlement.ts': ['--max-per-phase VALUE', '--metrics VALUE'],
};

function run(file: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', './worker/preload.ts', file, ...args], { cwd: root, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
  });
}

describe('benchmark --help', () => {
  it.each(Object.entries(benches))('%s prints its description and options, and refuses an unknown option', { timeout: 120_000 }, async (file, options) => {
    const help = await run(file, '--help');
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(new RegExp(`^usage: node ${file.replace('.', '\\.')} \\[options\\]\\n\\n\\S.*benchmark \\(not a test\\)`));
    for (const option of options) expect(help.stdout).toMatch(new RegExp(`^ {2}${option.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`, 'm'));
    expect(help.stdout).toMatch(/^ {2}--help, -h +this text$/m);
    expect(await run(file, '-h')).toMatchObject({ code: 0, stdout: help.stdout });
    const bad = await run(file, '--no-such-option');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("Unknown option '--no-such-option'");
    expect(bad.stderr).toContain(`node ${file} --help lists the options`);
    expect(bad.stderr).not.toMatch(/^\s+at /m);
  });

  it('reads the leading doc comment without its markers', () => {
    expect(leadingDocComment('/**\n * One.\n *\n *   indented\n */\nconst x = 1;')).toBe('One.\n\n  indented');
    expect(leadingDocComment('const x = 1;')).toBe('');
  });
});
