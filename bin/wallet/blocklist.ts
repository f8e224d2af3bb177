/**
 * The wallet's copy of the service's blocklist (docs/protocol.md section 18): downloaded when
 * online, verified against the service key this wallet trusts (the published development key, or
 * the one `config --blocklist-key` set; never the key the list names), kept in
 * `<dir>/blocklist.json`, and consulted by `receive`, which refuses offline a PLC that a blocked
 * key issued or signed a hop of. A list older than the one kept is refused (`blocklist_rollback`):
 * a stale copy replayed by a network in the middle cannot unblock a key.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import {
  bytesToHex,
  developmentBlocklistPublicKey,
  hexToBytes,
  isBlocked,
  msToIso,
  receiptTrustOf,
  verifyPlcReceipt,
  type ReceiptVerification,
  signedBlocklistJsonSchema,
  verifyBlocklistJson,
  type Plc,
  type SignedBlocklist,
  type SignedBlocklistJson,
} from '../../src/protocol/index.ts';
import { WalletError } from './errors.ts';
import { absentCodes, getJson, serverPaths } from './http.ts';
import { readJson, withWalletLock, writeAtomic, type Wallet } from './store.ts';

const blocklistFileSchema = z.strictObject({
  format: z.literal(1),
  list: signedBlocklistJsonSchema,
  fetched_at: z.string(),
  server: z.string(),
});

/** The key the blocklist must be signed with: the one `config --blocklist-key` set, or the development key. */
export function trustedBlocklistKey(wallet: Wallet): Uint8Array {
  return wallet.blocklistKey === undefined ? developmentBlocklistPublicKey : hexToBytes(wallet.blocklistKey, 32);
}

export function describeTrustedKey(wallet: Wallet): string {
  return wallet.blocklistKey ?? `${bytesToHex(developmentBlocklistPublicKey)} (the development key)`;
}

function blocklistPath(dir: string): string {
  return join(dir, 'blocklist.json');
}

export interface KeptBlocklist {
  readonly list: SignedBlocklist;
  readonly fetchedAt: string;
  readonly server: string;
}

/**
 * The list this wallet keeps, verified again against the key it trusts now; undefined when it
 * keeps none. A kept list that no longer verifies (the trusted key was changed) is reported and
 * not used.
 */
export function keptBlocklist(wallet: Wallet, notice: (line: string) => void): KeptBlocklist | undefined {
  const path = blocklistPath(wallet.dir);
  if (!existsSync(path)) return undefined;
  const parsed = blocklistFileSchema.safeParse(readJson(path));
  if (!parsed.success) throw new WalletError('corrupt_state', `${path} is not a blocklist file`);
  const verified = verifyBlocklistJson(parsed.data.list, trustedBlocklistKey(wallet));
  if (!verified.ok) {
    notice(`warning: the kept blocklist does not verify against the trusted key (${verified.message}); download it again`);
    return undefined;
  }
  return { list: verified.list, fetchedAt: parsed.data.fetched_at, server: parsed.data.server };
}

/**
 * Downloads the list from `server`, verifies it, and keeps it unless it is older than the kept
 * one. Answers the list now kept.
 */
export async function downloadBlocklist(wallet: Wallet, server: string, nowMs: number, notice: (line: string) => void): Promise<KeptBlocklist> {
  const answer = await getJson(server, serverPaths.blocklist, { deviceId: wallet.deviceId, absentCodes: absentCodes.blocklist });
  if (!answer.found) throw new WalletError('server_refused', `${server} serves no blocklist (404)`);
  const verified = verifyBlocklistJson(answer.body, trustedBlocklistKey(wallet));
  if (!verified.ok) throw new WalletError('blocklist_invalid', `the blocklist from ${server} is refused (${verified.reason}): ${verified.message}`);
  const fresh: KeptBlocklist = { list: verified.list, fetchedAt: msToIso(nowMs), server };
  const file = { format: 1 as const, list: answer.body as SignedBlocklistJson, fetched_at: fresh.fetchedAt, server };
  // The network outside the lock, the compare-and-write under it.
  return withWalletLock(wallet.dir, () => {
    const kept = keptBlocklist(wallet, notice);
    if (kept !== undefined && verified.list.version < kept.list.version) {
      throw new WalletError('blocklist_rollback', `${server} serves blocklist version ${verified.list.version}, older than the version ${kept.list.version} this wallet keeps`);
    }
    writeAtomic(blocklistPath(wallet.dir), `${JSON.stringify(blocklistFileSchema.parse(file), null, 2)}\n`, 0o600);
    return fresh;
  });
}

/** The keys that signed `plc` (its issuer, then each hop's sender) and are on `list`, without repeats. */
export function blockedSignersOf(plc: Plc, list: SignedBlocklist): string[] {
  const signers = [plc.commitment.issuerPublicKey, ...plc.transferChain.map((record) => record.senderPublicKey)];
  return [...new Set(signers.filter((key) => isBlocked(list, key)).map(bytesToHex))];
}

export function describeBlocklist(kept: KeptBlocklist): string {
  return `version ${kept.list.version} (published ${msToIso(kept.list.publishedAtMs)}), ${kept.list.keys.length} blocked key(s), fetched ${kept.fetchedAt} from ${kept.server}`;
}

/**
 * Checks the service's issue receipt the PLC carries (docs/protocol.md section 19) against the
 * receipt keys of the kept list (format v2), or, while the wallet keeps none (or a v1 list), the
 * service key it trusts for the blocklist.
 */
export function checkReceipt(wallet: Wallet, plc: Plc, kept: KeptBlocklist | undefined): ReceiptVerification {
  return verifyPlcReceipt(plc, receiptTrustOf(kept?.list, trustedBlocklistKey(wallet)));
}

/** Why a receipt was refused, for a person: what it means and what to do. */
export function describeReceiptRefusal(verdict: Exclude<ReceiptVerification, { ok: true }>): string {
  const what: Record<typeof verdict.reason, string> = {
    missing: 'the PLC carries no issue receipt: nothing shows the service ever registered it and reserved its amount',
    truncated: 'its issue receipt is cut short',
    malformed: 'its issue receipt is not in the receipt format',
    wrong_commitment: 'its issue receipt was made for another PLC',
    untrusted_key: 'its issue receipt is signed by a key this wallet does not trust for receipts (unknown, or revoked by the blocklist)',
    wrong_key: 'its issue receipt does not verify under the key it names (forged or altered)',
    key_not_valid_at_time: "its issue receipt was made outside its key's validity period",
  };
  return `${what[verdict.reason]} [${verdict.reason}]; refused offline: the sender's PLC may never have been backed (refresh the blocklist with "wallet blocklist" if the service rotated its keys)`;
}
