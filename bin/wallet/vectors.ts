/**
 * `wallet vectors`: runs the protocol's published test vectors (docs/protocol.md section 14)
 * through this program's own code, the way an implementer in another language would use them:
 * every key from its seed, the example PLC's bytes, hashes, verification and transport forms, each
 * invalid chain's reason, the fork, every authorisation, the record-clock cases and the crafted
 * Ed25519 cases. Prints one line per group; refuses (exit status 1) on the first group that fails.
 */
import { readFileSync } from 'node:fs';
import {
  bytesToHex,
  checkRecordClock,
  computeCommitmentHash,
  decodeTransportText,
  detectFork,
  encodeCommitment,
  generateKeyPair,
  hexToBytes,
  parsePlcJson,
  plcToJson,
  verifyCancel,
  verifyKeyOperation,
  verifyPlc,
  verifyRedeem,
  verifySignature,
} from '../../src/protocol/index.ts';
import { WalletError } from './errors.ts';

const defaultVectorsPath = new URL('../../test/src/protocol/vectors/protocol-v2.json', import.meta.url);
/** Bound on the vectors file read (the published one is about 100 KB). */
const vectorsBytesMax = 4 * 1024 * 1024;

interface Check {
  readonly group: string;
  readonly run: () => number;
}

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- a foreign document, checked field by field

function expectEqual(actual: unknown, expected: unknown, what: string): void {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what}: expected ${e}, got ${a}`);
}

export function vectorsCommand(options: { readonly file: string | undefined }): string {
  const path = options.file ?? defaultVectorsPath;
  let vectors: Json;
  try {
    const text = readFileSync(path, 'utf8');
    if (text.length > vectorsBytesMax) throw new Error(`larger than ${vectorsBytesMax} bytes`);
    vectors = JSON.parse(text) as Json;
  } catch (error) {
    throw new WalletError('invalid_input', `cannot read the vectors ${String(path)}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const h = (hex: string) => hexToBytes(hex);
  const checks: Check[] = [
    {
      group: 'keys',
      run: () => {
        const entries = Object.entries(vectors.keys as Record<string, Json>);
        for (const [name, key] of entries) expectEqual(bytesToHex(generateKeyPair(h(key.seed)).publicKey), key.public_key, `key ${name}`);
        return entries.length;
      },
    },
    {
      group: 'example PLC',
      run: () => {
        const plc = parsePlcJson(vectors.plc.json);
        const c = vectors.plc.commitment as Json;
        expectEqual(bytesToHex(encodeCommitment(plc.commitment)), c.canonical_bytes, 'canonical bytes');
        expectEqual(bytesToHex(computeCommitmentHash(plc.commitment)), c.commitment_hash, 'commitment hash');
        const result = verifyPlc(plc);
        if (!result.ok) throw new Error(`the example PLC does not verify: ${result.reason}`);
        expectEqual(bytesToHex(result.headHash), vectors.plc.head_hash, 'head hash');
        expectEqual(plcToJson(decodeTransportText(vectors.plc.transport.text)), vectors.plc.json, 'transport text');
        for (const t of vectors.plc.transfers as Json[]) {
          if (!verifySignature(h(t.signature), h(t.signed_message), h(t.sender_pubkey))) throw new Error(`transfer ${t.index} signature`);
        }
        return 4 + vectors.plc.transfers.length;
      },
    },
    {
      group: 'invalid chains',
      run: () => {
        for (const vector of vectors.invalid_chains as Json[]) {
          const result = verifyPlc(parsePlcJson(vector.plc));
          expectEqual(result.ok ? 'ok' : { reason: result.reason, index: result.index }, vector.expected, vector.name);
        }
        return vectors.invalid_chains.length;
      },
    },
    {
      group: 'fork',
      run: () => {
        const fork = detectFork(parsePlcJson(vectors.fork.first), parsePlcJson(vectors.fork.second));
        if (fork.kind !== 'fork') throw new Error(`the fork vector is ${fork.kind}`);
        expectEqual({ index: fork.index, culprit: bytesToHex(fork.culpritPublicKey) }, { index: vectors.fork.expected.index, culprit: vectors.fork.expected.culprit_pubkey }, 'fork');
        return 1;
      },
    },
    {
      group: 'authorisations',
      run: () => {
        const { cancel, redeem, backup, recover } = vectors.auth_messages as Record<string, Json>;
        const ok =
          verifyCancel({ tokenId: cancel!.token_id, commitmentHash: h(cancel!.commitment_hash), timestampMs: cancel!.timestamp_ms, issuerPublicKey: h(vectors.keys.alice.public_key), signature: h(cancel!.signature) }) &&
          verifyRedeem({
            tokenId: redeem!.token_id,
            headHash: h(redeem!.head_hash),
            settlementRail: redeem!.settlement_rail,
            destination: redeem!.destination,
            timestampMs: redeem!.timestamp_ms,
            bearerPublicKey: h(vectors.keys.alice.public_key),
            signature: h(redeem!.signature),
          }) &&
          [['backup', backup!], ['recover', recover!]].every(([kind, op]) =>
            verifyKeyOperation(kind as 'backup' | 'recover', { deviceId: (op as Json).device_id, publicKey: h((op as Json).public_key), operationTimestampMs: (op as Json).operation_timestamp, signature: h((op as Json).signature) }),
          );
        if (!ok) throw new Error('an authorisation does not verify');
        return 4;
      },
    },
    {
      group: 'record clock',
      run: () => {
        const plc = parsePlcJson(vectors.plc.json);
        for (const c of vectors.record_clock.cases as Json[]) {
          const check = checkRecordClock(plc.transferChain, c.now_ms, { clockToleranceMs: vectors.record_clock.clock_tolerance_ms });
          expectEqual(check.ok ? { ok: true } : { ok: false, reason: check.reason, index: check.index }, c.expected, c.description);
        }
        return vectors.record_clock.cases.length;
      },
    },
    {
      group: 'crafted Ed25519 cases',
      run: () => {
        for (const c of vectors.ed25519_cases.cases as Json[]) {
          const verdict = verifySignature(h(c.signature), h(c.message), h(c.public_key)) ? 'accept' : 'refuse';
          expectEqual(verdict, c.expected, c.name);
        }
        return vectors.ed25519_cases.cases.length;
      },
    },
  ];
  const lines: string[] = [];
  let total = 0;
  for (const check of checks) {
    let count: number;
    try {
      count = check.run();
    } catch (error) {
      throw new WalletError('rejected', `vectors, ${check.group}: ${error instanceof Error ? error.message : String(error)}`);
    }
    total += count;
    lines.push(`ok  ${check.group} (${count})`);
  }
  lines.push(`all ${total} vectors verify`);
  return lines.join('\n');
}
