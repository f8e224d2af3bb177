import { WithStartWorkflowOperation } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import { plcTaskQueueOf } from '../../infra/config.ts';
import { bytesToHex, type Plc } from '../../src/protocol/index.ts';
import { issuePlcUpdate } from '../../workflows/plc-messages.ts';
import { plcWorkflow } from '../../workflows/plc.ts';
import { businessStatusKey, ownerIdKey, tokenIdKey } from '../../workflows/search-attributes.ts';
import { plcToJson } from './wallet.ts';
import type { TestApp } from './app.ts';

/**
 * A PLC as one issued before expiry buckets (migration 35) stands: created through the API (of
 * `app`, `t`'s by default), then without a due time and with its own `plc-<token_id>` workflow,
 * started as the create route did then (its issue update finds the row: created=false). Such PLCs
 * keep the status outbox and their workflow's signals (docs/plc.md, "Expiry by time buckets").
 */
export async function createLegacyPlc(t: TestApp, plc: Plc, device: Record<string, string>, app: FastifyInstance = t.app): Promise<void> {
  const created = await app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
  expect(created.statusCode).toBe(200);
  const { commitment } = plc;
  const tokenId = commitment.tokenId;
  const issuerPubkey = bytesToHex(commitment.issuerPublicKey);
  await t.db.pool.query('UPDATE plcs SET expiry_due_at = NULL WHERE token_id = $1', [tokenId]);
  const issued = await t.temporal.workflow.executeUpdateWithStart(issuePlcUpdate, {
    args: [
      {
        tokenId,
        issuerPubkey,
        amountMinor: commitment.amountMinor.toString(),
        currency: commitment.currency as 'BRL' | 'USD' | 'EUR',
        createdAtMs: commitment.createdAtMs,
        expiresAtMs: commitment.expiresAtMs,
        nonce: bytesToHex(commitment.nonce),
        commitmentHash: bytesToHex(plc.commitmentHash),
        signature: bytesToHex(plc.issuerSignature),
        deviceId: device['x-device-id'] ?? '-',
        amountMaxMinor: t.config.PLC_MAX_AMOUNT_MINOR.toString(),
        dailyLimitMinor: t.config.PLC_DAILY_LIMIT_MINOR.toString(),
      },
    ],
    startWorkflowOperation: new WithStartWorkflowOperation(plcWorkflow, {
      workflowId: `plc-${tokenId}`,
      taskQueue: plcTaskQueueOf(t.config),
      args: [{ tokenId, issuerPubkey, expiryDueAtMs: commitment.expiresAtMs + t.config.CLOCK_TOLERANCE_MS }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: [
        { key: tokenIdKey, value: tokenId },
        { key: ownerIdKey, value: issuerPubkey },
        { key: businessStatusKey, value: 'ISSUED' },
      ],
    }),
  });
  expect(issued.created).toBe(false);
}
