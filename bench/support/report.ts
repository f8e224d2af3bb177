import { spawnSync } from 'node:child_process';
import os from 'node:os';

/** Plain-text reporting for benchmarks: aligned tables and the machine they ran on. */

/** Columns aligned: text left, anything that looks like a number right. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [header, ...rows];
  const widths = header.map((_, column) => Math.max(...all.map((row) => (row[column] ?? '').length)));
  const numeric = /^[-+]?[\d.,]+(%|x| ms)?$/;
  const line = (row: readonly string[]) =>
    row
      .map((cell, column) => (numeric.test(cell) ? cell.padStart(widths[column] ?? 0) : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map(line)].join('\n');
}

export interface MachineInfo {
  cpuModel: string;
  cpuCount: number;
  memoryGiB: number;
  platform: string;
  node: string;
  loadAverage: string;
}

export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cpuCount: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    loadAverage: os
      .loadavg()
      .map((value) => value.toFixed(2))
      .join(' '),
  };
}

/** The first line a command prints for its version (`postgres --version`), or "?". */
export function commandVersion(command: string, versionArgs: string[]): string {
  const result = spawnSync(command, versionArgs, { encoding: 'utf8', timeout: 10_000 });
  return result.status === 0 ? result.stdout.trim().split('\n')[0] ?? '?' : '?';
}

export const formatNumber = (value: number, digits = 0): string =>
  Number.isFinite(value) ? value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : 'n/a';
