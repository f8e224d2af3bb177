import { randomBytes, randomUUID } from 'node:crypto';
import { createB2bService } from '../../services/b2b.ts';
import { cnpjWithCheckDigits } from '../../src/b2b/cnpj.ts';
import { signRequest } from '../../src/b2b/request-signing.ts';
import { plcToJson, type Plc } from '../../src/protocol/index.ts';
import { runBoundedLoop } from './closed-loop.ts';
import { chainStates, type BenchWallet } from './fixtures.ts';
import type { BenchServices } from './services.ts';
import { postJson } from './transfer-load.ts';

/**
 * Part (d): the POS batch sync (docs/b2b.md) against the same items posted one by one. Each
 * round creates 2 x `items` PLCs through the API and signs one hop of each (issuer to a wallet);
 * half go to `POST /api/v1/pos/sync` in one signed batch, the other half to
 * `POST /api/v1/transfer/` one request after the other (one client: a terminal uploading
 * sequentially) and then, for reference, the same kind of items from 16 clients at once. Rounds
 * alternate which goes first, on a machine whose load varies.
 */

export interface PosBatchRound {
  round: number;
  items: number;
  batchMs: number;
  batchPerS: number;
  singlesMs: number;
  singlesPerS: number;
  parallelMs: number;
  parallelPerS: number;
}

export async function runPosBatchPart(options: {
  services: BenchServices;
  issuers: readonly BenchWallet[];
  wallets: readonly BenchWallet[];
  items: number;
  rounds: number;
  log: (line: string) => void;
}): Promise<PosBatchRound[]> {
  const { services, log, items } = options;
  const b2b = createB2bService(services.pool);
  const taxId = cnpjWithCheckDigits(`${randomBytes(6).readUIntBE(0, 6) % 10 ** 8}`.padStart(8, '0') + '0001');
  const customer = await b2b.signUp({ legalName: 'Bench Shop Ltda', taxId, contactEmail: 'bench@example.com', planId: 'BUSINESS' });
  const approved = await b2b.decide(customer.id, 'approve', 'bench', 'bench');
  if (approved.credential === null) throw new Error('the approval issued no credential');
  const credential = { keyId: approved.credential.row.key_id, secret: approved.credential.secret };
  const rounds: PosBatchRound[] = [];

  for (let round = 1; round <= options.rounds; round += 1) {
    const createdAtMs = Date.now();
    const chains: Plc[][] = Array.from({ length: 3 * items }, (_, k) => chainStates(options.issuers[k % 16] as BenchWallet, options.wallets, 1, createdAtMs));
    const perClient = Array.from({ length: 16 }, (_, client) => chains.map((_, k) => k).filter((k) => k % 16 === client));
    const created = await runBoundedLoop({
      name: `(d) round ${round}: create`,
      items: perClient,
      warmupMs: 0,
      durationMs: 600_000,
      progress: log,
      operation: async (k) => {
        // A loaded machine answers some creates 503 (Temporal's deadline): the same create again is idempotent.
        for (let attempt = 1; ; attempt += 1) {
          try {
            await postJson(services.baseUrl, '/api/v1/plc/create', JSON.stringify({ plc: plcToJson((chains[k] as Plc[])[0] as Plc) }), { 'x-device-id': `bench-pos-${k % 16}` });
            return;
          } catch (error) {
            if (attempt >= 5 || !String(error).includes('answered 503')) throw error;
            await new Promise((resolve) => setTimeout(resolve, 2000));
          }
        }
      },
    });
    if (created.operations !== chains.length) throw new Error(`only ${created.operations} of ${chains.length} PLCs were created: ${JSON.stringify(created.errors)}`);
    const hopped = chains.map((states) => states[1] as Plc);
    const batchItems = hopped.slice(0, items);
    const singleItems = hopped.slice(items, 2 * items);
    const parallelItems = hopped.slice(2 * items);

    const runBatch = async () => {
      const body = JSON.stringify({ batch_id: `bench-${randomUUID()}`, items: batchItems.map((plc) => ({ plc: plcToJson(plc) })) });
      const path = '/api/v1/pos/sync';
      const started = performance.now();
      const headers = signRequest(credential, { method: 'POST', pathWithQuery: path, body });
      const answer = (await postJson(services.baseUrl, path, body, { ...headers, 'x-device-id': 'bench-terminal' })) as { counts: { registered: number; refused: number } };
      const elapsed = performance.now() - started;
      if (answer.counts.registered !== items) throw new Error(`the batch registered ${answer.counts.registered} of ${items} items: ${JSON.stringify(answer.counts)}`);
      return elapsed;
    };
    const runSingles = async () => {
      const started = performance.now();
      for (const plc of singleItems) {
        const answer = (await postJson(services.baseUrl, '/api/v1/transfer/', JSON.stringify({ plc: plcToJson(plc) }), { 'x-device-id': 'bench-terminal' })) as { appended: number };
        if (answer.appended !== 1) throw new Error(`a transfer appended ${answer.appended}`);
      }
      return performance.now() - started;
    };
    const runParallel = async () => {
      const lists = Array.from({ length: 16 }, (_, client) => parallelItems.filter((_, k) => k % 16 === client));
      const started = performance.now();
      const done = await runBoundedLoop({
        name: `(d) round ${round}: transfer x16`,
        items: lists,
        warmupMs: 0,
        durationMs: 600_000,
        progress: () => {},
        operation: async (plc) => {
          await postJson(services.baseUrl, '/api/v1/transfer/', JSON.stringify({ plc: plcToJson(plc) }), { 'x-device-id': 'bench-terminal' });
        },
      });
      if (done.operations !== items) throw new Error(`16 clients registered ${done.operations} of ${items}: ${JSON.stringify(done.errors)}`);
      return performance.now() - started;
    };
    let batchMs: number;
    let singlesMs: number;
    if (round % 2 === 1) {
      batchMs = await runBatch();
      singlesMs = await runSingles();
    } else {
      singlesMs = await runSingles();
      batchMs = await runBatch();
    }
    const parallelMs = await runParallel();
    const result: PosBatchRound = {
      round,
      items,
      batchMs,
      batchPerS: (items * 1000) / batchMs,
      singlesMs,
      singlesPerS: (items * 1000) / singlesMs,
      parallelMs,
      parallelPerS: (items * 1000) / parallelMs,
    };
    rounds.push(result);
    log(
      `  [round ${round}] batch of ${items}: ${batchMs.toFixed(0)} ms = ${result.batchPerS.toFixed(0)} items/s; one by one: ${singlesMs.toFixed(0)} ms = ${result.singlesPerS.toFixed(0)} items/s; 16 clients: ${parallelMs.toFixed(0)} ms = ${result.parallelPerS.toFixed(0)} items/s`,
    );
  }
  return rounds;
}
