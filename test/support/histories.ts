import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { inject } from 'vitest';
import { temporalCliJson } from './temporal-cli.ts';

/**
 * Replays a finished workflow's history against the current workflow code and, with
 * RECORD_HISTORIES=1, records it as test/workflows/histories/<name>.json for
 * test/workflows/replay.test.ts (`temporal workflow show -o json` format). `runId` names one run
 * of the id (a cooldown started again under the same id); without it, the latest.
 */
export async function replayAndRecord(temporal: Client, workflowId: string, name: string, runId?: string): Promise<void> {
  const history = await temporal.workflow.getHandle(workflowId, runId).fetchHistory();
  await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, workflowId);
  if (process.env.RECORD_HISTORIES === '1') {
    const json = await temporalCliJson(['workflow', 'show', '--workflow-id', workflowId, ...(runId === undefined ? [] : ['--run-id', runId])]);
    writeFileSync(fileURLToPath(new URL(`../workflows/histories/${name}.json`, import.meta.url)), `${JSON.stringify(json, null, 1)}\n`);
  }
}
