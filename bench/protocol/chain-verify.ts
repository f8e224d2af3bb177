import { createPublicKey, verify as opensslVerify, type KeyObject } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { nodeVerifyEd25519 } from '../../infra/ed25519-node.ts';
import { encodeTransferMessage, verifyPlc, type Plc } from '../../src/protocol/index.ts';
import { chainStates, hop, issue, newWallet, type BenchWallet } from './fixtures.ts';

/**
 * Part (a): chain verification in the library, in one process, interleaved round by round so
 * that whatever else runs on the machine weighs on every variant alike:
 *
 *   noble  verifyPlc(plc) with the library's default @noble/ed25519 verifier
 *   node   verifyPlc(plc, { verifySignature: nodeVerifyEd25519 }) (the server's)
 *   raw    crypto.verify(null, message, keyObject, signature) on the same 17 signatures of each
 *          16-hop chain (issuer + 16 records), KeyObjects made beforehand: the floor
 *
 * Rates are hops per second of CPU time of this thread (a 16-hop chain counts 16 hops, its
 * issuer signature included in the cost), so node / raw is exactly "server verification as a
 * share of raw verification" and other processes on the machine do not skew it; wall-time rates
 * are reported beside them.
 * Warm: wallets come from a pool and are seen again and again (as in the service, where every
 * registration re-verifies the chain and wallet keys are long-lived); cold: every key of every
 * chain is new, so the key checks and KeyObject imports are paid in full.
 */

export interface ChainVerifyOptions {
  hops: number;
  chains: number;
  wallets: number;
  roundsMax: number;
  timeBudgetMs: number;
  coldChains: number;
  log: (line: string) => void;
}

export interface ChainVerifyResult {
  hops: number;
  chains: number;
  rounds: number;
  nobleHopsPerS: number;
  nodeHopsPerS: number;
  rawHopsPerS: number;
  rawVerifiesPerS: number;
  nodeOverRaw: number;
  nodeOverRawRounds: { min: number; max: number };
  nodeOverNoble: number;
  coldNodeHopsPerS: number;
  coldRawImportHopsPerS: number;
  coldNodeOverRaw: number;
  /** The same, by wall time (includes time other processes took the CPU away). */
  wall: { rawHopsPerS: number; nodeHopsPerS: number; nobleHopsPerS: number };
}

interface RawTriple {
  signature: Uint8Array;
  message: Uint8Array;
  key: KeyObject;
}

const spkiPrefix = Buffer.from('302a300506032b6570032100', 'hex');
const keyObject = (publicKey: Uint8Array): KeyObject => createPublicKey({ key: Buffer.concat([spkiPrefix, publicKey]), format: 'der', type: 'spki' });

function triplesOf(plc: Plc, keys: (publicKey: Uint8Array) => KeyObject): RawTriple[] {
  return [
    { signature: plc.issuerSignature, message: plc.commitmentHash, key: keys(plc.commitment.issuerPublicKey) },
    ...plc.transferChain.map((record) => ({ signature: record.signature, message: encodeTransferMessage(record), key: keys(record.senderPublicKey) })),
  ];
}

/** This thread's CPU time (user + system) in ms. */
function threadCpuMs(): number {
  const usage = process.threadCpuUsage();
  return (usage.user + usage.system) / 1000;
}

function timedCpu(work: () => void): number {
  const started = threadCpuMs();
  work();
  return threadCpuMs() - started;
}

export function benchChainVerification(options: ChainVerifyOptions): ChainVerifyResult {
  const { hops, log } = options;
  const createdAtMs = Date.now();
  const wallets = Array.from({ length: options.wallets }, () => newWallet());
  const keyObjects = new Map<string, KeyObject>(wallets.map((wallet) => [wallet.pubkey, keyObject(wallet.publicKey)]));
  const lookup = (publicKey: Uint8Array): KeyObject => keyObjects.get(Buffer.from(publicKey).toString('hex')) ?? keyObject(publicKey);
  const chains = Array.from({ length: options.chains }, () => chainStates(wallets[Math.floor(Math.random() * wallets.length)] as BenchWallet, wallets, hops, createdAtMs).at(-1) as Plc);
  const raw = chains.map((plc) => triplesOf(plc, lookup));
  const withNode = { verifySignature: nodeVerifyEd25519 };
  log(`(a) ${chains.length} chains of ${hops} hops over ${wallets.length} wallets; checking them once with each verifier`);
  for (const plc of chains) {
    const result = verifyPlc(plc, withNode);
    if (!result.ok) throw new Error(`a bench chain does not verify: ${result.reason}`);
  }
  if (!verifyPlc(chains[0] as Plc).ok) throw new Error('a bench chain does not verify with noble');

  const rawChain = (triples: readonly RawTriple[]): void => {
    for (const { signature, message, key } of triples) {
      if (!opensslVerify(null, message, key, signature)) throw new Error('raw verify failed');
    }
  };
  const nodeChain = (plc: Plc): void => {
    if (!verifyPlc(plc, withNode).ok) throw new Error('node verify failed');
  };
  const nobleChain = (plc: Plc): void => {
    if (!verifyPlc(plc).ok) throw new Error('noble verify failed');
  };

  // Warm-up: JIT, key caches.
  for (const [i, plc] of chains.entries()) {
    rawChain(raw[i] as RawTriple[]);
    nodeChain(plc);
  }
  nobleChain(chains[0] as Plc);

  // Interleaved chain by chain (raw, node, raw, node, ...) and timed in this thread's CPU time,
  // so that other processes taking the CPUs away slow neither side; wall time is kept as well.
  const noblePerRound = Math.max(1, Math.ceil(chains.length / 16));
  let nobleCursor = 0;
  const spent = { rawCpu: 0, nodeCpu: 0, nobleCpu: 0, rawWall: 0, nodeWall: 0, nobleWall: 0 };
  let rounds = 0;
  const ratios: number[] = [];
  const deadline = performance.now() + options.timeBudgetMs;
  while (rounds < options.roundsMax && (rounds < 2 || performance.now() < deadline)) {
    const round = { rawCpu: 0, nodeCpu: 0 };
    for (const [i, plc] of chains.entries()) {
      const raws = raw[i] as RawTriple[];
      const [first, second] = i % 2 === 0 ? (['raw', 'node'] as const) : (['node', 'raw'] as const);
      for (const which of [first, second]) {
        const wall = performance.now();
        const cpu = threadCpuMs();
        if (which === 'raw') rawChain(raws);
        else nodeChain(plc);
        const cpuMs = threadCpuMs() - cpu;
        const wallMs = performance.now() - wall;
        if (which === 'raw') {
          round.rawCpu += cpuMs;
          spent.rawWall += wallMs;
        } else {
          round.nodeCpu += cpuMs;
          spent.nodeWall += wallMs;
        }
      }
    }
    spent.rawCpu += round.rawCpu;
    spent.nodeCpu += round.nodeCpu;
    rounds += 1;
    ratios.push(round.rawCpu / round.nodeCpu);
    log(
      `  [chain verify] round ${rounds} (CPU time): raw ${Math.round((chains.length * hops * 1000) / round.rawCpu)} hops/s, ` +
        `node ${Math.round((chains.length * hops * 1000) / round.nodeCpu)} hops/s (${((round.rawCpu / round.nodeCpu) * 100).toFixed(1)}% of raw)`,
    );
  }
  // noble on its own afterwards: its BigInt garbage would otherwise land on the others' clocks.
  const nobleStarted = performance.now();
  while (nobleCursor < Math.max(noblePerRound * rounds, 2) && (nobleCursor < 2 || performance.now() < nobleStarted + options.timeBudgetMs / 2)) {
    const plc = chains[nobleCursor % chains.length] as Plc;
    nobleCursor += 1;
    const wall = performance.now();
    const cpu = threadCpuMs();
    nobleChain(plc);
    spent.nobleCpu += threadCpuMs() - cpu;
    spent.nobleWall += performance.now() - wall;
  }
  log(`  [chain verify] noble: ${nobleCursor} chains, ${Math.round((nobleCursor * hops * 1000) / spent.nobleCpu)} hops/s`);
  const hopsPerS = (chainCount: number, ms: number) => (chainCount * hops * 1000) / ms;

  // Cold: every key new to both caches. The raw floor for it imports each key first.
  const cold = Array.from({ length: options.coldChains }, () => {
    const fresh = Array.from({ length: hops + 1 }, () => newWallet());
    let plc = issue(fresh[0] as BenchWallet, { amountMinor: 100n, createdAtMs });
    for (let j = 1; j <= hops; j += 1) plc = hop(plc, fresh[j - 1] as BenchWallet, fresh[j] as BenchWallet, createdAtMs + j * 1000);
    return plc;
  });
  const coldRawMs = timedCpu(() => {
    for (const plc of cold) rawChain(triplesOf(plc, keyObject));
  });
  const coldNodeMs = timedCpu(() => {
    for (const plc of cold) nodeChain(plc);
  });
  log(`  [chain verify] cold: ${cold.length} chains with all-new keys: node ${Math.round(hopsPerS(cold.length, coldNodeMs))} hops/s, raw with key import ${Math.round(hopsPerS(cold.length, coldRawMs))} hops/s`);

  const rawHopsPerS = hopsPerS(chains.length * rounds, spent.rawCpu);
  const nodeHopsPerS = hopsPerS(chains.length * rounds, spent.nodeCpu);
  const nobleHopsPerS = hopsPerS(nobleCursor, spent.nobleCpu);
  const coldNodeHopsPerS = hopsPerS(cold.length, coldNodeMs);
  return {
    hops,
    chains: chains.length,
    rounds,
    nobleHopsPerS,
    nodeHopsPerS,
    rawHopsPerS,
    rawVerifiesPerS: (chains.length * (hops + 1) * rounds * 1000) / spent.rawCpu,
    nodeOverRaw: nodeHopsPerS / rawHopsPerS,
    nodeOverRawRounds: { min: Math.min(...ratios), max: Math.max(...ratios) },
    nodeOverNoble: nodeHopsPerS / nobleHopsPerS,
    coldNodeHopsPerS,
    coldRawImportHopsPerS: hopsPerS(cold.length, coldRawMs),
    coldNodeOverRaw: coldNodeHopsPerS / rawHopsPerS,
    wall: {
      rawHopsPerS: hopsPerS(chains.length * rounds, spent.rawWall),
      nodeHopsPerS: hopsPerS(chains.length * rounds, spent.nodeWall),
      nobleHopsPerS: hopsPerS(nobleCursor, spent.nobleWall),
    },
  };
}
