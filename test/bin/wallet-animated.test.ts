/**
 * The animated code between the wallet program and the browser wallet (docs/protocol.md section
 * 15): a full chain (32 records) travels as @ngraveio/bc-ur fountain parts, one a line, read in
 * any order with repeats and a quarter of them lost. `receive` reassembles them with the module the
 * browser wallet scans with (bin/wallet/fountain.ts), then checks what it checks of any PLC (the
 * issue receipt included); `send --ur-parts` writes parts the browser's decoder reads. A cut or
 * damaged set is refused in words.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  appendTransfer,
  chainLengthMax,
  createPlc,
  decodeTransport,
  developmentBlocklistSeed,
  encodeTransport,
  generateKeyPair,
  hexToBytes,
  signIssueReceipt,
  withIssueReceipt,
  type Plc,
} from '../../src/protocol/index.ts';
import { fountainParts } from '../../bin/wallet/fountain.ts';
import { FountainDecoder } from '../../wallet/src/fountain.ts';
import { field, ok, refused, walletPath, type Run } from './wallet-cli.ts';

let root: string;
const dirs = { sender: '', receiver: '', other: '' };
const keys = { sender: '', receiver: '', other: '' };

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'wallet-animated-'));
  for (const name of ['sender', 'receiver', 'other'] as const) {
    dirs[name] = join(root, name);
    keys[name] = field(await ok(dirs[name], 'init'), 'public_key');
  }
}, 60_000);

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

/** A PLC with `hops` records through fresh keys, the last one to `to`, with the service's issue receipt. */
function chainTo(to: string, hops: number, options: { receipt?: boolean } = {}): Plc {
  const issuer = generateKeyPair();
  const now = Date.now();
  let plc = createPlc({ issuerSecretKey: issuer.secretKey, amountMinor: 100_000_000_000_000n, currency: 'BRL', createdAtMs: now - 60_000, ttlHours: 168 });
  if (options.receipt !== false) plc = withIssueReceipt(plc, signIssueReceipt({ commitment: plc.commitment, serviceSecretKey: developmentBlocklistSeed, issuedAtMs: now - 59_000 }));
  let holder = issuer;
  for (let i = 0; i < hops; i++) {
    const next = generateKeyPair();
    plc = appendTransfer(plc, { senderSecretKey: holder.secretKey, recipientPublicKey: i === hops - 1 ? hexToBytes(to, 32) : next.publicKey, timestampMs: now - 60_000 + i });
    holder = next;
  }
  return plc;
}

/** A small deterministic generator (mulberry32), so that a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What a camera sees of an animated code: a quarter of the parts lost, some read twice, all in any order. */
/** The parts in an order of `seed`'s, none missing. */
function shuffled(parts: readonly string[], seed: number): string[] {
  const next = random(seed);
  const order = [...parts];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

function onTheWay(parts: readonly string[], seed: number): string[] {
  const next = random(seed);
  const kept = parts.filter((_, index) => index % 4 !== 1);
  const repeated = [...kept, kept[0]!, kept[3]!, kept[kept.length - 1]!];
  for (let i = repeated.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [repeated[i], repeated[j]] = [repeated[j]!, repeated[i]!];
  }
  return repeated;
}

/** Runs the wallet program with `input` on its stdin. */
function walletWithStdin(dir: string, input: string, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [walletPath, '--dir', dir, ...args], { timeout: 20_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
    child.stdin!.end(input);
  });
}

describe('the animated code (ur:bytes fountain parts) between wallets', () => {
  it(`carries a full chain (${chainLengthMax} records): parts shuffled, a quarter lost, repeats; the CLI writes parts the browser's decoder reads`, { timeout: 120_000 }, async () => {
    // 31 records reach the sender as animated parts (as the browser wallet shows them: upper case).
    const plc = chainTo(keys.sender, chainLengthMax - 1);
    const parts = fountainParts(encodeTransport(plc));
    expect(parts.length).toBeGreaterThanOrEqual(30);
    const inbound = onTheWay(parts, 37);
    expect(inbound.length).toBeLessThan(parts.length);
    const file = join(root, 'inbound.txt');
    writeFileSync(file, `${inbound.join('\n')}\n`);
    const received = await ok(dirs.sender, 'receive', '--in', file);
    expect(received).toContain(`received ${plc.commitment.tokenId}`);
    expect(received).toMatch(new RegExp(`hops:\\s+${chainLengthMax - 1}\\b`));

    // The 32nd record: too long for one code, so the parts alone carry it.
    const outFile = join(root, 'outbound.txt');
    const sent = await ok(dirs.sender, 'send', '--token', plc.commitment.tokenId, '--to', keys.receiver, '--ur-parts', outFile);
    expect(sent).toMatch(/wrote .*outbound\.txt \(animated code: \d+ ur:bytes parts of \d+ fragments/);
    expect(sent).not.toContain('PLC2:');
    const written = readFileSync(outFile, 'utf8').trim().split('\n');
    expect(written.every((line) => /^UR:BYTES\/\d+-\d+\/[A-Z]+$/.test(line))).toBe(true);

    // The browser wallet's decoder (wallet/src/fountain.ts), fed frame by frame as its camera would.
    const scanner = new FountainDecoder();
    let message: Uint8Array | null = null;
    for (const part of onTheWay(written, 5)) {
      message ??= scanner.receive(part);
    }
    expect(message).not.toBeNull();
    const decoded = decodeTransport(message!);
    expect(decoded.transferChain).toHaveLength(chainLengthMax);
    expect(Buffer.from(decoded.transferChain.at(-1)!.recipientPublicKey).toString('hex')).toBe(keys.receiver);

    // The CLI receiver, from stdin, in any order, with losses and repeats.
    const run = await walletWithStdin(dirs.receiver, `${onTheWay(written, 11).join('\n')}\n`, 'receive', '--in', '-');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`received ${plc.commitment.tokenId}`);
    expect(run.stdout).toMatch(new RegExp(`hops:\\s+${chainLengthMax}\\b`));
    const stored = JSON.parse(readFileSync(join(dirs.receiver, 'plcs', `${plc.commitment.tokenId}.json`), 'utf8')) as { plc: { transfer_chain: unknown[] } };
    expect(stored.plc.transfer_chain).toHaveLength(chainLengthMax);
    // Read again: the same chain is not taken twice.
    await refused(dirs.receiver, 'already_received', 'receive', '--in', outFile);
  });

  it('refuses a cut set, a damaged part, a part of another code, and parts of a PLC without its receipt, each in words', { timeout: 120_000 }, async () => {
    const plc = chainTo(keys.other, 25);
    const parts = fountainParts(encodeTransport(plc));
    const file = join(root, 'bad.txt');

    writeFileSync(file, parts.slice(0, 5).join('\n'));
    const cut = await refused(dirs.other, 'invalid_input', 'receive', '--in', file);
    expect(cut.stderr).toMatch(/the animated code is incomplete: 5 part\(s\) read, 5 of its \d+ fragments recovered; read more of its frames/);

    const damaged = [...parts];
    damaged[2] = `${damaged[2]!.slice(0, -8)}ABCDEFGH`;
    writeFileSync(file, damaged.join('\n'));
    const garbled = await refused(dirs.other, 'invalid_input', 'receive', '--in', file);
    expect(garbled.stderr).toMatch(/part 3 of \d+ is damaged/);

    const mixed = [...parts];
    mixed[1] = fountainParts(encodeTransport(chainTo(keys.other, 25)))[1]!;
    writeFileSync(file, mixed.join('\n'));
    const foreign = await refused(dirs.other, 'invalid_input', 'receive', '--in', file);
    expect(foreign.stderr).toContain('part 2 of');
    expect(foreign.stderr).toContain('belongs to another animated code');

    writeFileSync(file, [parts[0]!, 'PLC2:NOTAPART'].join('\n'));
    const notPart = await refused(dirs.other, 'invalid_input', 'receive', '--in', file);
    expect(notPart.stderr).toContain('part 2 of 2 is not a ur:bytes/ part of an animated code');

    // Reassembled, then checked like any PLC: without the service's issue receipt it is refused.
    const unbacked = chainTo(keys.other, 25, { receipt: false });
    // Every part, shuffled: what is refused here is the PLC, not the set (a quarter dropped can leave a
    // fragment unrecovered for some messages: the fountain's mixing depends on the message itself).
    writeFileSync(file, shuffled(fountainParts(encodeTransport(unbacked)), 3).join('\n'));
    await refused(dirs.other, 'unbacked', 'receive', '--in', file);
    expect(() => readFileSync(join(dirs.other, 'plcs', `${unbacked.commitment.tokenId}.json`))).toThrow();
  });
});
