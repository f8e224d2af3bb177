import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';

/**
 * Recorded histories of every workflow, replayed against today's workflow code: a change that
 * would break running workflows (non-determinism) fails here. Histories are recorded by the
 * workflow tests with RECORD_HISTORIES=1 (`temporal workflow show -o json` format) and committed.
 */
const historiesDir = fileURLToPath(new URL('./histories/', import.meta.url));
const files = readdirSync(historiesDir).filter((file) => file.endsWith('.json'));

function load(file: string): { workflowId: string; history: unknown } {
  return { workflowId: file.replace(/\.json$/, ''), history: JSON.parse(readFileSync(`${historiesDir}${file}`, 'utf8')) };
}

describe('recorded workflow histories', () => {
  it('are there to replay', () => {
    expect(files.length).toBeGreaterThan(0);
  });

  it.each(files)('%s replays against the current workflow code', async (file) => {
    const { workflowId, history } = load(file);
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history as never, workflowId);
  });

  it('fail to replay against workflow code that changed its commands (the check can fail)', async () => {
    const deposit = files.find((file) => file.startsWith('deposit-'));
    expect(deposit).toBeDefined();
    const { workflowId, history } = load(deposit as string);
    const changed = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('./fixtures/changed-deposit-workflow.ts', import.meta.url)),
      logger: undefined,
    });
    await expect(Worker.runReplayHistory({ workflowBundle: changed }, history as never, workflowId)).rejects.toThrow(
      /[Nn]ondeterminis|DeterminismViolation/,
    );
  });
});
