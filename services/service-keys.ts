import { developmentBlocklistSeed, generateKeyPair, hexToBytes, type KeyPair } from '../src/protocol/index.ts';

/**
 * The service's own signing key from configuration: the blocklist's (BLOCKLIST_SIGNING_SEED, or
 * the published development seed). The issue receipts' key defaults to it
 * (services/issue-receipt.ts, `receiptSigningKey`); both the blocklist publisher and the receipts
 * read it here, so neither service depends on the other for it.
 */
export function blocklistSigningKey(config: { BLOCKLIST_SIGNING_SEED?: string | undefined }): KeyPair {
  return generateKeyPair(config.BLOCKLIST_SIGNING_SEED === undefined ? developmentBlocklistSeed : hexToBytes(config.BLOCKLIST_SIGNING_SEED, 32));
}
