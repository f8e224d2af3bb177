/**
 * The documents hold to the code (issue 34, "the letter of docs/protocol.md"): the tables an
 * implementer builds from are read out of the Markdown and compared with what the code does, so
 * neither can drift from the other unnoticed:
 *
 * - docs/protocol.md section 3, the domain tags: every tag the code signs or hashes under is a row,
 *   every row's hex and length are its ASCII's, every row's ASCII is a tag the code uses, and the
 *   set is prefix-free;
 * - docs/protocol.md section 13, the refusals: every code is one of src/errors.ts with the status
 *   api/plugins/errors.ts answers;
 * - docs/protocol.md section 5.1 and 9.2, the limits: the amount, time and expiry bounds, the
 *   currencies, the destination bound and the Pix key length are the constants';
 * - docs/errors.md: every code listed once with the status the code answers, and every code listed.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { statusByCode } from '../../api/plugins/errors.ts';
import { errorCodes, type ErrorCode } from '../../src/errors.ts';
import { feeConsentMessage } from '../../src/fees/consent.ts';
import { blocklistDomainTag } from '../../src/protocol/blocklist.ts';
import {
  amountMinorMax,
  currencyDecimals,
  destinationBytesMax,
  domainTags,
  keyOperationMessage,
  settlementRails,
  timestampMsMax,
  ttlMsMax,
  ttlMsMin,
} from '../../src/protocol/index.ts';
import { pixKeyLengthMax } from '../../src/settlement/pix-key.ts';

const root = path.resolve(import.meta.dirname, '../..');
const protocolDoc = readFileSync(path.join(root, 'docs/protocol.md'), 'utf8');
const errorsDoc = readFileSync(path.join(root, 'docs/errors.md'), 'utf8');

/** The text of one section: from its heading to the next heading of the same or a higher level. */
function section(doc: string, heading: string): string {
  const lines = doc.split('\n');
  const start = lines.findIndex((line) => line.startsWith('#') && line.replace(/^#+\s*/, '').startsWith(heading));
  if (start < 0) throw new Error(`no section "${heading}"`);
  const level = /^#+/.exec(lines[start]!)![0].length;
  const end = lines.findIndex((line, index) => index > start && /^#+\s/.test(line) && /^#+/.exec(line)![0].length <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}

/** The rows of the first Markdown table in `text` under `header` (its first cell), as cells. */
function tableRows(text: string, header: string): string[][] {
  const lines = text.split('\n');
  const start = lines.findIndex((line) => line.startsWith('|') && line.split('|')[1]!.trim() === header);
  if (start < 0) throw new Error(`no table headed "${header}"`);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(line.split('|').slice(1, -1).map((cell) => cell.trim()));
  }
  return rows;
}

const codeSpans = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]!);
const decimal = (text: string): bigint => BigInt(text.replace(/,/g, ''));

/** Every source file of the service (not tests, not dependencies), for "the code uses this tag". */
function sourceText(): string {
  const texts: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name.endsWith('.ts')) texts.push(readFileSync(full, 'utf8'));
    }
  };
  for (const dir of ['src', 'api', 'services', 'db']) walk(path.join(root, dir));
  return texts.join('\n');
}

describe('docs/protocol.md section 3: the domain-tag table', () => {
  const rows = tableRows(section(protocolDoc, '3. Domain tags'), 'name');
  const ascii = (row: string[]) => codeSpans(row[1]!)[0]!.replace(/\\0$/, '\0');

  it('writes each tag with its own hex and length', () => {
    expect(rows.length).toBeGreaterThanOrEqual(11);
    for (const row of rows) {
      const tag = ascii(row);
      const hex = codeSpans(row[2]!)[0];
      if (hex === undefined) {
        // A text message's prefix (backup, recover, fee consent): no hex, no length.
        expect(row[2], row[0]).toBe('(text message)');
        expect(tag.endsWith(':'), row[0]).toBe(true);
        continue;
      }
      expect(Buffer.from(tag, 'latin1').toString('hex'), row[0]).toBe(hex);
      expect(Number(row[3]), row[0]).toBe(tag.length);
    }
  });

  it('has a row for every tag the code signs or hashes under, and only tags the code uses', () => {
    const documented = rows.map(ascii);
    const latin1 = (bytes: Uint8Array) => Buffer.from(bytes).toString('latin1');
    const inCode = [
      ...Object.values(domainTags).map(latin1),
      latin1(blocklistDomainTag),
      // The text messages' prefixes, as their builders write them.
      ...(['backup', 'recover'] as const).map((kind) => keyOperationMessage(kind, { deviceId: 'd', publicKey: new Uint8Array(32).fill(1), operationTimestampMs: 1 }).split(':')[0]! + `:${kind}:`),
      'svc:fee-consent:',
    ];
    expect(feeConsentMessage({ deviceId: 'd', publicKey: new Uint8Array(32).fill(1), scheduleVersion: 1, operationTimestampMs: 1 }).startsWith('svc:fee-consent:')).toBe(true);
    for (const tag of inCode) expect(documented, JSON.stringify(tag)).toContain(tag);
    const source = sourceText();
    for (const tag of documented) expect(source.includes(tag.replace(/\0$/, '')), `the code never uses ${JSON.stringify(tag)}`).toBe(true);
  });

  it('is prefix-free', () => {
    const tags = rows.map(ascii);
    for (const a of tags) for (const b of tags) if (a !== b) expect(b.startsWith(a), `${JSON.stringify(a)} is a prefix of ${JSON.stringify(b)}`).toBe(false);
  });
});

describe('docs/protocol.md section 13: the refusals table', () => {
  const rows = tableRows(section(protocolDoc, '13. Server API'), 'code');

  it('names only codes the server has, each with the status it answers', () => {
    let checked = 0;
    for (const row of rows) {
      const status = Number(row[1]);
      for (const span of codeSpans(row[0]!)) {
        const code = span.split('.')[0]!;
        if (!/^[A-Z][A-Z0-9_]+$/.test(code)) continue; // "a schema rule (`too_big`, ...)"
        expect(errorCodes, code).toContain(code);
        expect(statusByCode[code as ErrorCode], code).toBe(status);
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(28);
  });
});

describe('docs/protocol.md sections 5.1 and 9.2: the limits', () => {
  const fields = Object.fromEntries(tableRows(section(protocolDoc, '5.1 Fields and limits'), 'field').map((row) => [row[0]!, row[2]!]));
  const rails = tableRows(section(protocolDoc, '9.2 Redeem'), 'rail');

  it('states the bounds of the constants', () => {
    expect(fields.amount).toMatch(/^1 to 10\^15 /);
    expect(10n ** 15n).toBe(amountMinorMax);
    const [, createdMax] = /0 to ([\d,]+)/.exec(fields.created_at!)!;
    expect(decimal(createdMax!)).toBe(BigInt(timestampMsMax));
    const [, ttlMin, ttlMax] = /from ([\d,]+) \(1 hour\) to ([\d,]+) \(168 hours\)/.exec(fields.expires_at!)!;
    expect([Number(decimal(ttlMin!)), Number(decimal(ttlMax!))]).toEqual([ttlMsMin, ttlMsMax]);
    expect(codeSpans(fields.currency!).sort()).toEqual(Object.keys(currencyDecimals).sort());
    for (const decimals of Object.values(currencyDecimals)) expect(fields.decimals).toContain(`${decimals} for all three`);
  });

  it('names the rails the code takes, the destination bound and the Pix key length', () => {
    expect(rails.map((row) => codeSpans(row[0]!)[0]).sort()).toEqual([...settlementRails].sort());
    expect(section(protocolDoc, '9.2 Redeem')).toContain(`1 to ${destinationBytesMax} UTF-8 bytes`);
    const pix = rails.find((row) => row[0] === '`pix`')![1]!;
    expect(pix).toContain(`at most ${pixKeyLengthMax} characters`);
  });
});

describe('docs/errors.md: the error-code list', () => {
  const listed = new Map<string, number>();
  for (const line of errorsDoc.split('\n')) {
    const match = /^\| `([A-Z][A-Z0-9_]+)` \| (\d{3}) \|/.exec(line);
    if (match === null) continue;
    expect(listed.has(match[1]!), `${match[1]} listed twice`).toBe(false);
    listed.set(match[1]!, Number(match[2]));
  }

  it('lists every code once, with the status the server answers', () => {
    for (const code of errorCodes) expect(listed.get(code), code).toBe(statusByCode[code]);
  });
});
