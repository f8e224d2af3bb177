/**
 * Preloaded into the worker process, in its main thread and in each worker thread Node starts
 * (`node --import ./worker/preload.ts worker/main.ts`): installs the workflow-thread guard
 * (worker/workflow-thread-guard.ts explains why and what it changes).
 */
import { installWorkflowThreadGuard } from './workflow-thread-guard.ts';

installWorkflowThreadGuard();
