import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { cnpjWithCheckDigits, maskCnpj, normalizeCnpj } from '../../src/b2b/cnpj.ts';
import { b2bTransitions, nextB2bStatus } from '../../src/b2b/customer-status.ts';
import { requestMac, signingKeyOf, signRequest, stringToSign } from '../../src/b2b/request-signing.ts';
import { bytesToHex } from '../../src/protocol/bytes.ts';
import { loggerOptions } from '../../infra/logger.ts';

describe('CNPJ', () => {
  it('accepts a CNPJ with right check digits, bare or formatted, and stores its 14 digits', () => {
    expect(normalizeCnpj('11222333000181')).toBe('11222333000181');
    expect(normalizeCnpj('11.222.333/0001-81')).toBe('11222333000181');
    expect(cnpjWithCheckDigits('112223330001')).toBe('11222333000181');
  });

  it('refuses wrong check digits, one repeated digit, other lengths and odd punctuation', () => {
    expect(normalizeCnpj('11222333000182')).toBeNull();
    expect(normalizeCnpj('11222333000191')).toBeNull();
    expect(normalizeCnpj('00000000000000')).toBeNull();
    expect(normalizeCnpj('1122233300018')).toBeNull();
    expect(normalizeCnpj('11.222.333.0001-81')).toBeNull();
    expect(normalizeCnpj('52998224725')).toBeNull();
  });

  it('masks all but the first two and the check digits', () => {
    expect(maskCnpj('11222333000181')).toBe('11.***.***/****-81');
  });
});

describe('customer states', () => {
  it('follows the documented table and nothing else', () => {
    expect(b2bTransitions()).toEqual([
      { action: 'approve', from: 'PENDING_REVIEW', to: 'ACTIVE' },
      { action: 'approve', from: 'SUSPENDED', to: 'ACTIVE' },
      { action: 'suspend', from: 'ACTIVE', to: 'SUSPENDED' },
      { action: 'block', from: 'PENDING_REVIEW', to: 'BLOCKED' },
      { action: 'block', from: 'ACTIVE', to: 'BLOCKED' },
      { action: 'block', from: 'SUSPENDED', to: 'BLOCKED' },
    ]);
    expect(nextB2bStatus('BLOCKED', 'approve')).toBeNull();
    expect(nextB2bStatus('PENDING_REVIEW', 'suspend')).toBeNull();
    expect(nextB2bStatus('ACTIVE', 'approve')).toBeNull();
  });
});

describe('request signing', () => {
  it('signs method, path, timestamp, nonce and the body hash, one per line', () => {
    const text = stringToSign({ method: 'post', pathWithQuery: '/api/v1/pos/sync?x=1', timestamp: 1795996800, nonce: 'n'.repeat(16), body: '{}' });
    expect(text).toBe(
      ['PLC-HMAC-SHA256', 'POST', '/api/v1/pos/sync?x=1', '1795996800', 'nnnnnnnnnnnnnnnn', '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a'].join('\n'),
    );
  });

  it('matches an independent HMAC-SHA256 computation and changes with every part', async () => {
    const { createHmac } = await import('node:crypto');
    const secret = 'sk_' + 'A'.repeat(43);
    const key = createHmac('sha256', secret).update('plc-settlement/api-signing-key/v1').digest();
    expect(bytesToHex(signingKeyOf(secret))).toBe(key.toString('hex'));
    const parts = { method: 'GET', pathWithQuery: '/api/v1/b2b/me', timestamp: 1795996800, nonce: 'abcdefghijklmnop', body: '' };
    const expected = createHmac('sha256', key).update(stringToSign(parts)).digest('hex');
    expect(bytesToHex(requestMac(signingKeyOf(secret), parts))).toBe(expected);
    const headers = signRequest({ keyId: 'ak_' + '0'.repeat(24), secret }, { ...parts });
    expect(headers['x-plc-signature']).toBe(`v1=${expected}`);
    for (const change of [{ method: 'POST' }, { pathWithQuery: '/api/v1/b2b/me?a' }, { timestamp: 1795996801 }, { nonce: 'abcdefghijklmnoq' }, { body: ' ' }]) {
      expect(bytesToHex(requestMac(signingKeyOf(secret), { ...parts, ...change }))).not.toBe(expected);
    }
  });
});

describe('logging', () => {
  it('never writes a tax id or a request signature', () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _encoding, done) => { lines.push(String(chunk)); done(); } });
    const log = pino(loggerOptions('info', 'test'), sink);
    log.info({ tax_id: '11222333000181', body: { tax_id: '11222333000181' }, headers: { 'x-plc-signature': 'v1=ab' } }, 'sign-up');
    expect(lines.join('')).not.toContain('11222333000181');
    expect(lines.join('')).not.toContain('v1=ab');
  });
});
