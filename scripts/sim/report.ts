import { amountText } from './world.ts';
import type { SimResult } from './runner.ts';

/** The simulation's summary: steps, operations by kind, faults, payouts, violations, wall time. */
export function formatSummary(result: SimResult): string {
  const s = result.stats;
  const rows: [string, string][] = [
    ['seed', String(result.seed)],
    ['steps', String(s.steps)],
    ['runs', String(s.runs)],
    ...Object.entries(s.ops)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([kind, n]): [string, string] => [`  op ${kind}`, String(n)]),
    ...Object.entries(s.faults)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([kind, n]): [string, string] => [`  fault ${kind}`, String(n)]),
    ['requests', `${s.requests} (${Object.entries(s.statuses).map(([status, n]) => `${status === '0' ? 'no answer' : status}: ${n}`).join(', ')})`],
    ['payouts', `${s.payouts} (${amountText(s.payoutMinor)} BRL)`],
    ['refused payouts', String(s.refusedPayouts)],
    ['checkpoints', String(s.checkpoints)],
    ['violations', String(s.violations.length)],
    ['wall time', `${result.seconds.toFixed(1)} s`],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  return rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`).join('\n');
}
