/**
 * The offline hop through real QR codes: one wallet program writes the PLC2: text of a chain at the
 * transport's largest size beside an issue receipt (19 records, docs/protocol.md 10.3 and 19.6) as a PNG with `send --image`, another
 * reads the picture with `receive --image` (a real decoder: ZXing-C++), and the chain arrives
 * byte for byte. Also the SVG and terminal forms, and the refusals.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  appendTransfer,
  createPlc,
  encodeTransportText,
  generateKeyPair,
  hexToBytes,
  plcToJson,
  developmentBlocklistSeed,
  signIssueReceipt,
  transportHopsMaxWithReceipt,
  withIssueReceipt,
  type Plc,
} from '../../src/protocol/index.ts';
import { field, ok, refused, wallet } from './wallet-cli.ts';

let root: string;
const dirs = { sender: '', receiver: '' };
const keys = { sender: '', receiver: '' };

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'wallet-qr-'));
  dirs.sender = join(root, 'sender');
  dirs.receiver = join(root, 'receiver');
  keys.sender = field(await ok(dirs.sender, 'init'), 'public_key');
  keys.receiver = field(await ok(dirs.receiver, 'init'), 'public_key');
}, 60_000);

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

/**
 * A PLC with `hops` records through fresh keys, the last one to `to`, at the widest amount, with
 * the service's issue receipt (docs/protocol.md section 19) by the development key the wallets trust.
 */
function chainTo(to: string, hops: number): Plc {
  const issuer = generateKeyPair();
  const now = Date.now();
  let plc = createPlc({ issuerSecretKey: issuer.secretKey, amountMinor: 100_000_000_000_000n, currency: 'BRL', createdAtMs: now - 60_000, ttlHours: 168 });
  plc = withIssueReceipt(plc, signIssueReceipt({ commitment: plc.commitment, serviceSecretKey: developmentBlocklistSeed, issuedAtMs: now - 59_000 }));
  let holder = issuer;
  for (let i = 0; i < hops; i++) {
    const last = i === hops - 1;
    const next = generateKeyPair();
    plc = appendTransfer(plc, { senderSecretKey: holder.secretKey, recipientPublicKey: last ? hexToBytes(to, 32) : next.publicKey, timestampMs: now - 60_000 + i });
    holder = next;
  }
  return plc;
}

describe('the wallet program through QR code pictures', () => {
  it(`sends the largest chain the text form carries (${transportHopsMaxWithReceipt} records) as a PNG that the other wallet reads back`, { timeout: 120_000 }, async () => {
    // 18 hops reach the sender; its own send is the 19th, the most beside a receipt (10.3).
    const plc = chainTo(keys.sender, transportHopsMaxWithReceipt - 1);
    await ok(dirs.sender, 'receive', '--text', encodeTransportText(plc));
    const png = join(root, 'hop.png');
    const sent = await ok(dirs.sender, 'send', '--token', plc.commitment.tokenId, '--to', keys.receiver, '--image', png);
    expect(sent).toContain(`wrote ${png} (QR code version 40, error correction L, PNG)`);
    const text = sent.trim().split('\n').at(-1)!;
    expect(text.startsWith('PLC2:')).toBe(true);
    expect(text.length).toBeGreaterThan(4_000);
    expect(readFileSync(png).subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(statSync(png).size).toBeGreaterThan(1_000);

    const received = await ok(dirs.receiver, 'receive', '--image', png);
    expect(received).toContain(`received ${plc.commitment.tokenId}`);
    expect(received).toMatch(new RegExp(`hops:\\s+${transportHopsMaxWithReceipt}\\b`));
    // What arrived is exactly what was sent: the stored chain re-encodes to the same text.
    const stored = JSON.parse(readFileSync(join(dirs.receiver, 'plcs', `${plc.commitment.tokenId}.json`), 'utf8')) as { plc: { transfer_chain: { recipient_pubkey: string }[] } };
    expect(stored.plc.transfer_chain).toHaveLength(transportHopsMaxWithReceipt);
    expect(stored.plc.transfer_chain.at(-1)!.recipient_pubkey).toBe(keys.receiver);
    // The same picture again is the same chain: refused as such, not as unreadable.
    await refused(dirs.receiver, 'already_received', 'receive', '--image', png);
  });

  it('writes an SVG and draws the code in the terminal', { timeout: 60_000 }, async () => {
    const plc = chainTo(keys.sender, 1);
    await ok(dirs.sender, 'receive', '--text', encodeTransportText(plc));
    const svg = join(root, 'hop.svg');
    const output = await ok(dirs.sender, 'send', '--token', plc.commitment.tokenId, '--to', keys.receiver, '--image', svg, '--qr');
    expect(readFileSync(svg, 'utf8')).toMatch(/<svg [^>]*viewBox="0 0 \d+ \d+"/);
    // Unicode half blocks: two modules a character, every line as wide as the code.
    const drawing = output.split('\n').filter((line) => /[█▀▄]/.test(line));
    expect(drawing.length).toBeGreaterThan(10);
    expect(new Set(drawing.map((line) => [...line].length)).size).toBe(1);
    // An SVG is not read back (render it to PNG first): a usage error, exit status 2.
    const svgRun = await wallet(dirs.receiver, 'receive', '--image', svg);
    expect(svgRun.code).toBe(2);
    expect(svgRun.stderr).toContain('reads a PNG');
  });

  it('refuses a picture without a QR code, a chain too long for one code, and images in JSON form', { timeout: 60_000 }, async () => {
    const blank = join(root, 'blank.png');
    // A valid PNG with no code in it: one transparent pixel.
    const onePixel = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000'
      + '1f15c4890000000d49444154789c63f8ffff3f0005fe02fea7d6a4c50000000049454e44ae426082', 'hex');
    writeFileSync(blank, onePixel);
    await refused(dirs.receiver, 'invalid_input', 'receive', '--image', blank);

    const long = chainTo(keys.sender, transportHopsMaxWithReceipt);
    const longPath = join(root, 'long.json');
    writeFileSync(longPath, JSON.stringify(plcToJson(long)));
    await ok(dirs.sender, 'receive', '--in', longPath);
    await refused(dirs.sender, 'transport_too_large', 'send', '--token', long.commitment.tokenId, '--to', keys.receiver, '--image', join(root, 'too-long.png'));
    // A QR code carries the text form only.
    const run = await wallet(dirs.sender, 'send', '--token', long.commitment.tokenId, '--to', keys.receiver, '--format', 'json', '--qr');
    expect(run.code).toBe(2);
  });
});
