import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { plcToJson } from '../../src/protocol/index.ts';
import { bareInsertUpdate, bareWorkflow } from './bare-workflow.ts';
import { runBoundedLoop, type BoundedLoopResult } from './closed-loop.ts';
import { cpuSince, cpuSnapshot, type CpuSources, type CpuSpent } from './cpu.ts';
import { issue, type BenchWallet } from './fixtures.ts';
import { startProfile, type ProfileHandle } from './profiler.ts';
import type { BenchServices } from './services.ts';
import { postJson } from './transfer-load.ts';

/**
 * Part (c): PLC create through the API against a bare update-with-start, at the same
 * concurrency, driven the same way (a closed loop per client, from this process): each create
 * client is one issuer sending fresh signed PLCs, made before the clock starts; each bare client
 * starts `bare-<uuid>` workflows whose update inserts one row in a local activity.
 */

export interface CreateRun {
  kind: 'create' | 'bare';
  clients: number;
  loop: BoundedLoopResult;
  cpu: CpuSpent;
}

export async function runCreateScenario(options: {
  services: BenchServices;
  kind: 'create' | 'bare';
  issuers: readonly BenchWallet[];
  clients: number;
  perClientMax: number;
  warmupMs: number;
  durationMs: number;
  cpuSources: CpuSources;
  log: (line: string) => void;
  profileDir?: string | undefined;
}): Promise<CreateRun> {
  const { services, kind, clients } = options;
  if (options.issuers.length < clients) throw new Error(`need ${clients} issuers`);
  const name = `${kind} x${clients}`;
  let before: Awaited<ReturnType<typeof cpuSnapshot>> | undefined;
  // Profiles, when asked for: this process (the workers and the loops) and, for creates, the API process.
  let profile: ProfileHandle | undefined;
  const profileApi = kind === 'create' && options.profileDir !== undefined;
  const onMeasureStart = async () => {
    profile = await startProfile(options.profileDir, `${kind}-x${clients}-workers`);
    if (profileApi) await services.api.ask({ type: 'profile-start', dir: options.profileDir, name: `${kind}-x${clients}-api` });
    before = await cpuSnapshot(options.cpuSources);
  };

  // What both kinds' loops share: the name, the windows, the progress lines and the CPU sample at the window's start.
  const loopOptions = { name, warmupMs: options.warmupMs, durationMs: options.durationMs, progress: options.log, onMeasureStart };
  let loop: BoundedLoopResult;
  if (kind === 'create') {
    const createdAtMs = Date.now();
    const items = Array.from({ length: clients }, (_, client) =>
      Array.from({ length: options.perClientMax }, () => JSON.stringify({ plc: plcToJson(issue(options.issuers[client] as BenchWallet, { amountMinor: 100n, createdAtMs })) })),
    );
    options.log(`  [${name}] ${clients * options.perClientMax} signed PLCs ready`);
    loop = await runBoundedLoop({
      ...loopOptions,
      items,
      operation: async (body, client) => {
        const answer = (await postJson(services.baseUrl, '/api/v1/plc/create', body, { 'x-device-id': `bench-issuer-${client}` })) as { created?: boolean };
        if (answer.created !== true) throw new Error('create answered created=false');
      },
    });
  } else {
    const items = Array.from({ length: clients }, () => Array.from({ length: options.perClientMax }, () => randomUUID()));
    loop = await runBoundedLoop({
      ...loopOptions,
      items,
      operation: async (id) => {
        await services.temporal.workflow.executeUpdateWithStart(bareInsertUpdate, {
          args: [{ id }],
          startWorkflowOperation: new WithStartWorkflowOperation(bareWorkflow, {
            workflowId: `bare-${id}`,
            taskQueue: services.bareTaskQueue,
            args: [],
            workflowIdConflictPolicy: 'USE_EXISTING',
          }),
        });
      },
    });
  }
  if (before === undefined) throw new Error(`${name}: the measured window never started`);
  const cpu = await cpuSince(before, options.cpuSources);
  for (const line of (await profile?.stop()) ?? []) options.log(line);
  if (profileApi) for (const line of await services.api.ask<string[]>({ type: 'profile-stop' })) options.log(line);
  return { kind, clients, loop, cpu };
}
