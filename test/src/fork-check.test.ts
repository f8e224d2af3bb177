/**
 * The pure fork check (src/plc/fork-check.ts): what a fork is against the registered chain, its
 * evidence in full, and what counts as one fork for the risk flag (docs/protocol.md section 8).
 */
import { describe, expect, it } from 'vitest';
import { findFork, forkEvidenceJson, forkFlagKey } from '../../src/plc/fork-check.ts';
import { fromTransferRecord } from '../../src/plc/register-transfers.ts';
import { parsePlcJson, plcToJson, verifyForkEvidence, type TransferRecordJson } from '../../src/protocol/index.ts';
import { hop, issue, newWallet } from '../support/wallet.ts';

const [a, b, c, d, e] = [newWallet(), newWallet(), newWallet(), newWallet(), newWallet()];
const plc = issue(a);
const toB = hop(plc, a, b);
const branches = [hop(toB, b, c), hop(toB, b, d), hop(toB, b, e)];
const registered = branches[0]!.transferChain.map(fromTransferRecord);
const tokenId = plc.commitment.tokenId;

/** A record's JSON form back to bytes, through the PLC JSON parser (a one-record chain around it). */
function recordOf(json: TransferRecordJson) {
  return parsePlcJson({ ...plcToJson(plc), transfer_chain: [json] }).transferChain[0]!;
}

describe('findFork', () => {
  it('finds none for the registered chain, an older state or an extension', () => {
    expect(findFork(tokenId, registered, branches[0]!.transferChain)).toBeNull();
    expect(findFork(tokenId, registered, toB.transferChain)).toBeNull();
    expect(findFork(tokenId, registered, hop(branches[0]!, c, d).transferChain)).toBeNull();
  });

  it('finds the fork of another branch, naming the culprit, with both records in full (a proof on its own)', () => {
    const finding = findFork(tokenId, registered, branches[1]!.transferChain)!;
    expect(finding).toMatchObject({ index: 1, culpritPubkey: b.pubkey, prevHash: registered[1]!.prevHash });
    const evidence = forkEvidenceJson(finding);
    expect(evidence).toMatchObject({ token_id: tokenId, culprit_pubkey: b.pubkey, position: 1 });
    const first = recordOf(evidence.registered_record);
    const second = recordOf(evidence.presented_record);
    expect(verifyForkEvidence({ prevHash: first.prevHash, culpritPublicKey: b.keys.publicKey, first, second })).toBe(true);
  });

  it('counts every branch after the same state, by the same key, as one fork', () => {
    const keys = branches.slice(1).map((branch) => forkFlagKey(findFork(tokenId, registered, branch.transferChain)!));
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toBe(`fork:${tokenId}:${registered[1]!.prevHash}:${b.pubkey}`);
  });
});
