import { describe, expect, it } from 'vitest';
import { RegisteredChains, registeredChainOf } from '../../services/registered-chains.ts';
import { fromTransferRecord } from '../../src/plc/register-transfers.ts';
import { bytesToHex } from '../../src/protocol/index.ts';
import { hop, issue, newWallet } from '../support/wallet.ts';

describe('RegisteredChains (the transfer route memory of what it registered)', () => {
  const [a, b, c] = [newWallet(), newWallet(), newWallet()];
  const plc0 = issue(a, { amountMinor: 100n });
  const plc2 = hop(hop(plc0, a, b), b, c);
  const tokenId = plc0.commitment.tokenId;
  const records = plc2.transferChain.map((record, position) => ({ ...fromTransferRecord(record), position }));

  it('remembers an issued PLC, then its extensions, with the verified signatures as the prefix', () => {
    const chains = new RegisteredChains(10);
    chains.rememberIssued({ tokenId, commitmentHash: plc0.commitmentHash, issuerSignature: plc0.issuerSignature, expiresAtMs: plc0.commitment.expiresAtMs });
    const issued = chains.get(tokenId);
    expect(issued).toMatchObject({ status: 'ISSUED', chainLength: 0, headHash: bytesToHex(plc0.commitmentHash), known: [] });
    chains.rememberExtended(issued!, records, { chainLength: 2, headHash: records[1]!.recordHash });
    const extended = chains.get(tokenId);
    expect(extended).toMatchObject({ status: 'TRANSFERRED', chainLength: 2, headHash: records[1]!.recordHash });
    expect(extended?.known.map((record) => record.recordHash)).toEqual(records.map((record) => record.recordHash));
    expect(extended?.prefix.records.map((record) => bytesToHex(record.signature))).toEqual(records.map((record) => record.signature));
    chains.forget(tokenId);
    expect(chains.get(tokenId)).toBeUndefined();
  });

  it('is bounded, least recently used out first; 0 remembers nothing', () => {
    const chains = new RegisteredChains(2);
    for (const id of ['t1', 't2', 't3']) {
      chains.rememberIssued({ tokenId: id, commitmentHash: plc0.commitmentHash, issuerSignature: plc0.issuerSignature, expiresAtMs: 1 });
    }
    expect(chains.get('t1')).toBeUndefined();
    expect(chains.get('t3')).toBeDefined();
    const off = new RegisteredChains(0);
    off.rememberIssued({ tokenId, commitmentHash: plc0.commitmentHash, issuerSignature: plc0.issuerSignature, expiresAtMs: 1 });
    expect(off.get(tokenId)).toBeUndefined();
  });

  it('builds an entry from a row read only for a live PLC without a redemption in flight whose chain was read whole', () => {
    const row = {
      token_id: tokenId,
      commitment_hash: bytesToHex(plc0.commitmentHash),
      signature: bytesToHex(plc0.issuerSignature),
      expires_at_ms: BigInt(plc0.commitment.expiresAtMs),
      status: 'TRANSFERRED',
      chain_length: 2,
      head_hash: records[1]!.recordHash,
      redemption_id: null,
    };
    const known = records.map(({ position: _position, ...record }) => record);
    expect(registeredChainOf(row, known)).toMatchObject({ chainLength: 2, status: 'TRANSFERRED', expiresAtMs: plc0.commitment.expiresAtMs });
    expect(registeredChainOf({ ...row, redemption_id: '00000000-0000-4000-8000-000000000000' }, known)).toBeNull();
    expect(registeredChainOf({ ...row, status: 'REDEEMED' }, known)).toBeNull();
    expect(registeredChainOf(row, known.slice(0, 1))).toBeNull();
  });
});
