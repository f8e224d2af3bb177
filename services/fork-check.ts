import { listTransfers, toKnownRecord } from '../db/plcs.ts';
import type { Pool } from '../db/pool.ts';
import { DomainError } from '../src/errors.ts';
import { findFork, forkEvidenceJson, type ForkFinding } from '../src/plc/fork-check.ts';
import type { KnownRecord } from '../src/plc/register-transfers.ts';
import type { TransferRecord } from '../src/protocol/index.ts';
import { recordForkAndBlock } from './blocklist.ts';

/**
 * The fork check every route that receives a chain runs first (docs/protocol.md section 8): the
 * transfer registration, the redemption routes, and any later one (a POS sync) through the same
 * function. A presented chain that forks from the registered one is refused with 409
 * DOUBLE_SPEND_DETECTED and evidence anyone can check offline (both records in full), and raises
 * one high DOUBLE_SPEND_FORK flag per culprit and fork, whose `occurrences` counts each showing;
 * the culprit's key is blocked in the same transaction (services/blocklist.ts, section 18).
 * It runs before the PLC's status is looked at: the same fork is refused and flagged alike
 * whether the PLC is TRANSFERRED, being redeemed, REDEEMED or EXPIRED.
 */

/** Where the fork was shown (kept in the flag's details, and logged). */
export type ChainRoute = 'transfer' | 'redeem' | 'settlements' | (string & {});

export interface ForkCheckInput {
  tokenId: string;
  presented: readonly TransferRecord[];
  route: ChainRoute;
  deviceId: string;
}

/**
 * Raises (or counts again) the fork's flag and blocks the culprit's key, in one transaction, then
 * throws the refusal with the evidence.
 */
export async function refuseFork(pool: Pool, finding: ForkFinding, where: { route: ChainRoute; deviceId: string }): Promise<never> {
  const evidence = forkEvidenceJson(finding);
  const { flag, block } = await recordForkAndBlock(pool, finding, where);
  throw new DomainError('DOUBLE_SPEND_DETECTED', 'this chain spends a PLC state that already has another successor: a double spend by its signer', {
    ...evidence,
    // The name this refusal had before (the culprit), kept for clients that read it.
    signer_pubkey: finding.culpritPubkey,
    risk_flag_id: flag.id,
    occurrences: flag.occurrences,
    // The culprit's block (in force, or lifted by an admin since this same fork blocked it).
    key_block_id: block.id,
    key_blocked: block.lifted_at === null,
  });
}

/**
 * Compares `presented` with the chain registered for the PLC (`known`, or read from `db`) and
 * refuses a fork. Returns the registered chain, for the caller's next decision.
 */
export async function checkForkAgainstRegistered(pool: Pool, input: ForkCheckInput, known?: readonly KnownRecord[]): Promise<readonly KnownRecord[]> {
  const registered = known ?? (await listTransfers(pool, input.tokenId)).map(toKnownRecord);
  const finding = findFork(input.tokenId, registered, input.presented);
  if (finding !== null) await refuseFork(pool, finding, { route: input.route, deviceId: input.deviceId });
  return registered;
}
