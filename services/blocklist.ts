import { blockKey, blocklistVersion, currentBlocklist, liftBlock, publishReceiptKeys, type KeyBlockRow } from '../db/blocklist.ts';
import { withTransaction, type Pool, type PoolClient } from '../db/pool.ts';
import { recordReputationEvent } from '../db/reputation.ts';
import { raiseRiskFlag, type RiskFlagRow } from '../db/risk-flags.ts';
import { DomainError } from '../src/errors.ts';
import { forkEvidenceJson, forkFlagKey, type ForkFinding } from '../src/plc/fork-check.ts';
import {
  blocklistToJson,
  bytesToHex,
  hexToBytes,
  signBlocklist,
  canonicalReceiptKeyOrder,
  timestampMsMax,
  type KeyPair,
  type ReceiptKey,
  type SignedBlocklistJson,
} from '../src/protocol/index.ts';
import { receiptKeysFromText, receiptKeysText } from './issue-receipt.ts';

/**
 * The blocklist of keys proven to cheat (docs/protocol.md section 18): a fork's culprit is
 * blocked in the transaction that records the fork's evidence; the service publishes the list,
 * signed; an admin lifts a block with a reason.
 */

/**
 * Called in the blocking transaction, once per new block, after the block row is written: the
 * owner's reputation drops to the lowest tier, sanctioned (docs/limits-and-fees.md, `KEY_BLOCKED`),
 * in this same transaction. Recorded once per block.
 */
export async function onKeyBlocked(tx: PoolClient, entry: KeyBlockRow): Promise<void> {
  await recordReputationEvent(tx, entry.owner_id, 'KEY_BLOCKED', {
    reason: `key ${entry.pubkey} blocked: ${blockCause[entry.reason]} (risk flag ${entry.risk_flag_id}, shown at ${entry.route})`,
    reference: `key-block:${entry.id}`,
  });
}

const blockCause: Record<KeyBlockRow['reason'], string> = {
  DOUBLE_SPEND_FORK: 'a fork it signed was proven',
  ISSUER_DOUBLE_ISSUE: 'two commitments it signed under one token id were proven',
  CANCEL_AFTER_TRANSFER: 'it cancelled a PLC after signing its first transfer',
};

/** Where a fork was shown. */
export interface ForkShown {
  route: string;
  deviceId: string;
}

/**
 * Records a proven fork: raises (or counts again) its DOUBLE_SPEND_FORK risk flag and blocks the
 * culprit's key, in one transaction, so the evidence and the block exist together or not at all.
 */
export async function recordForkAndBlock(pool: Pool, finding: ForkFinding, where: ForkShown): Promise<{ flag: RiskFlagRow; block: KeyBlockRow }> {
  const evidence = forkEvidenceJson(finding);
  return withTransaction(pool, async (tx) => {
    const flag = await raiseRiskFlag(tx, {
      flagType: 'DOUBLE_SPEND_FORK',
      severity: 'high',
      subjectPubkey: finding.culpritPubkey,
      tokenId: finding.tokenId,
      dedupeKey: forkFlagKey(finding),
      details: { ...evidence, route: where.route, device_id: where.deviceId },
    });
    // The proof itself sanctions the owner (once per fork: the flag is its reference).
    await recordReputationEvent(tx, finding.culpritPubkey, 'FORK_PROVEN', {
      reason: `fork proven: two successors of one state of PLC ${finding.tokenId} signed by ${finding.culpritPubkey}`,
      reference: `risk-flag:${flag.id}`,
      severity: 'high',
    });
    const { created, entry } = await blockKey(tx, {
      pubkey: finding.culpritPubkey,
      // A wallet is its key: the key's ledger owner is the key itself (docs/plc.md).
      ownerId: finding.culpritPubkey,
      riskFlagId: flag.id,
      tokenId: finding.tokenId,
      route: where.route,
    });
    if (created) await onKeyBlocked(tx, entry);
    return { flag, block: entry };
  });
}

/**
 * The signed list as served. A version's bytes never change (its keys and time are fixed when it
 * is made, and Ed25519 signing is deterministic), so the last one signed is kept and served again
 * while the version stays; a request then costs one small read.
 */
export function createBlocklistPublisher(deps: { pool: Pool; signingKey: KeyPair; receiptKeys?: readonly ReceiptKey[] }) {
  // The receipt keys (format v2, docs/protocol.md 19.4): the configured set becomes the list's,
  // as a new version when it changed, before the first list this process signs.
  const receiptKeys = receiptKeysText(canonicalReceiptKeyOrder(deps.receiptKeys ?? [{ publicKey: deps.signingKey.publicKey, validFromMs: 0, validUntilMs: timestampMsMax }]));
  let published: Promise<boolean> | null = null;
  let last: SignedBlocklistJson | null = null;
  return {
    publicKey: bytesToHex(deps.signingKey.publicKey),
    async signedList(): Promise<SignedBlocklistJson> {
      published ??= publishReceiptKeys(deps.pool, receiptKeys).catch((error: unknown) => {
        published = null;
        throw error;
      });
      await published;
      if (last !== null && (await blocklistVersion(deps.pool)).version === last.version) return last;
      const current = await currentBlocklist(deps.pool);
      // The keys the version recorded, not this process's configuration: a version has one content.
      const signed = blocklistToJson(
        signBlocklist(
          {
            version: current.version,
            publishedAtMs: current.published_at.getTime(),
            keys: current.keys.map((key) => hexToBytes(key, 32)),
            receiptKeys: receiptKeysFromText(current.receipt_keys),
          },
          deps.signingKey.secretKey,
        ),
      );
      if (last === null || signed.version > last.version) last = signed;
      return signed;
    },
  };
}

/** Lifts the key's block in force, as the next version of the list; 404 KEY_NOT_BLOCKED when none is. */
export async function liftKeyBlock(pool: Pool, pubkey: string, lift: { liftedBy: string; reason: string }): Promise<KeyBlockRow> {
  const lifted = await withTransaction(pool, (tx) => liftBlock(tx, pubkey, lift));
  if (lifted === null) throw new DomainError('KEY_NOT_BLOCKED', 'this key has no block in force', { pubkey });
  return lifted;
}
