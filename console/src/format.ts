/** Display helpers. */

export function shortId(id: string | null | undefined, keep = 8): string {
  if (id === null || id === undefined) return '—';
  return id.length <= keep + 1 ? id : `${id.slice(0, keep)}…`;
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

export function when(iso: string | null | undefined): string {
  if (iso === null || iso === undefined) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toISOString().replace('T', ' ').slice(0, 19);
}

export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const pubkeyPattern = /^[0-9a-f]{64}$/;

/** An amount's minor units from its decimal string ("-12.5" -> -1250n), or null when it is not one. */
export function minorUnits(amount: string, decimals = 2): bigint | null {
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(amount.trim());
  if (match === null) return null;
  const fraction = (match[3] ?? '').padEnd(decimals, '0');
  if (fraction.length > decimals) return null;
  const value = BigInt(match[2]!) * 10n ** BigInt(decimals) + BigInt(fraction === '' ? '0' : fraction);
  return match[1] === '-' ? -value : value;
}

/**
 * Minor units as money, exactly (BigInt, no float): BRL as "R$ 1.234,56" (the sign before the
 * symbol), any other currency as "1,234.56 XYZ".
 */
export function moneyFromMinor(minor: bigint, currency: string, options: { signed?: boolean } = {}): string {
  const negative = minor < 0n;
  const absolute = negative ? -minor : minor;
  const units = (absolute / 100n).toString();
  const cents = (absolute % 100n).toString().padStart(2, '0');
  const sign = negative ? '−' : options.signed === true && minor > 0n ? '+' : '';
  if (currency === 'BRL') return `${sign}R$ ${units.replace(/\B(?=(\d{3})+(?!\d))/g, '.')},${cents}`;
  return `${sign}${units.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}.${cents} ${currency}`;
}

/** A decimal amount string as money (the string itself when it is not a decimal amount). */
export function money(amount: string | null | undefined, currency: string, options: { signed?: boolean } = {}): string {
  if (amount === null || amount === undefined) return '—';
  const minor = minorUnits(amount);
  return minor === null ? `${amount} ${currency}` : moneyFromMinor(minor, currency, options);
}

/** A bucket bound (a round number): "250 ms", "2 s", "30 min", "24 h". */
function bound(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${ms / 1000} s`;
  if (ms < 3_600_000) return `${ms / 60_000} min`;
  return `${ms / 3_600_000} h`;
}

/** A histogram bucket as the bounds it vouches for: "≤ 250 ms", "1 s – 2 s", "> 24 h". */
export function bucketLabel(bucket: { above_ms: number; at_most_ms: number | null } | null | undefined): string {
  if (bucket === null || bucket === undefined) return '—';
  if (bucket.at_most_ms === null) return `> ${bound(bucket.above_ms)}`;
  if (bucket.above_ms === 0) return `≤ ${bound(bucket.at_most_ms)}`;
  return `${bound(bucket.above_ms)} – ${bound(bucket.at_most_ms)}`;
}
