/**
 * Log lines for a person at a terminal (LOG_FORMAT=pretty; `npm start` chooses it when its
 * output is a terminal): one short line per record instead of pino's JSON. A request is
 * `12:03:07 api   POST /api/v1/plc/create 409 12 ms INSUFFICIENT_FUNDS`; anything else is the
 * time, the process, the level when it is not info, the message and its fields as key=value. An
 * error logged at error level or above keeps its stack (a bug wants one); below that (an expected
 * refusal, a warning) it is its type and message on the same line.
 *
 * A formatter of our own rather than pino-pretty: pino-pretty prints every field on lines of their
 * own and the whole stack of any `err`, the two things this is here to avoid, and a dependency for
 * forty lines of formatting is not worth its updates. Files and production keep pino's JSON.
 */

/** pino's numeric levels, named as shown (info is left out: it is the normal case). */
const levelNames: Readonly<Record<number, string>> = { 10: 'TRACE', 20: 'DEBUG', 30: '', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** Fields every record has, or that the line shows in its own place. */
const shownApart = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'err', 'reqId', 'trace_id', 'span_id']);
/** Bound on one field's value as shown. */
const valueCharsMax = 120;

interface LogRecord {
  readonly level?: number | string;
  readonly time?: string | number;
  readonly name?: string;
  readonly msg?: string;
  readonly err?: { readonly type?: string; readonly message?: string; readonly stack?: string; readonly code?: string };
  readonly [field: string]: unknown;
}

function clock(time: string | number | undefined): string {
  const date = time === undefined ? new Date() : new Date(time);
  return Number.isNaN(date.getTime()) ? '--:--:--' : date.toISOString().slice(11, 19);
}

function levelNumber(level: number | string | undefined): number {
  if (typeof level === 'number') return level;
  const named: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };
  return named[level ?? 'info'] ?? 30;
}

function valueText(value: unknown): string {
  const text = typeof value === 'string' ? (/\s/.test(value) ? JSON.stringify(value) : value) : JSON.stringify(value);
  return text.length > valueCharsMax ? `${text.slice(0, valueCharsMax)}…` : text;
}

/** The request line the API logs in pretty mode (api/plugins/request-log.ts). */
function requestLine(record: LogRecord): string | null {
  if (record.msg !== 'request' || typeof record.method !== 'string' || typeof record.url !== 'string' || typeof record.statusCode !== 'number') return null;
  const time = typeof record.responseTimeMs === 'number' ? ` ${record.responseTimeMs} ms` : '';
  const code = typeof record.code === 'string' ? ` ${record.code}` : '';
  return `${record.method} ${record.url} ${record.statusCode}${time}${code}`;
}

/** One JSON record from pino as the line (or, for an error with its stack, the lines) a person reads. */
export function formatRecord(json: string): string {
  let record: LogRecord;
  try {
    record = JSON.parse(json) as LogRecord;
  } catch {
    return json.trimEnd();
  }
  if (record === null || typeof record !== 'object') return json.trimEnd();
  const level = levelNumber(record.level);
  const head = `${clock(record.time)} ${(record.name ?? '').padEnd(6)}${levelNames[level] === '' || levelNames[level] === undefined ? '' : ` ${levelNames[level]}`}`;
  const request = requestLine(record);
  if (request !== null) return `${head} ${request}`;
  const fields = Object.entries(record)
    .filter(([key, value]) => !shownApart.has(key) && value !== undefined)
    .map(([key, value]) => `${key}=${valueText(value)}`);
  const err = record.err;
  const error = err === undefined ? '' : ` ${err.code ?? err.type ?? 'Error'}: ${err.message ?? ''}`;
  const line = `${head} ${record.msg ?? ''}${error}${fields.length === 0 ? '' : `  ${fields.join(' ')}`}`;
  if (err?.stack !== undefined && level >= 50) return `${line}\n${err.stack.split('\n').slice(1).join('\n')}`;
  return line;
}

/** A pino destination writing `formatRecord` lines to `out` (process.stdout by default). */
export function prettyDestination(out: { write(text: string): unknown } = process.stdout): { write(json: string): void } {
  return {
    write(json: string): void {
      out.write(`${formatRecord(json)}\n`);
    },
  };
}
