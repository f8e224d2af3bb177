/**
 * What the wallet keeps of each PLC (IndexedDB store `tokens`, ./db.ts), apart from the storage
 * itself so that the PLC logic (./wallet-ops.ts) is free of browser types and runs under Node in
 * its unit test (test/wallet/wallet-ops.test.ts).
 */
import type { PlcJson } from '../../src/protocol/index.ts';

export interface RedeemRecord {
  redemption_id: string | null;
  status: string | null;
  failure_reason: string | null;
  rail: 'pix' | 'boleto';
  destination: string;
  timestamp_ms: number;
  idempotency_key: string;
  fee: string | null;
  outcome: 'unknown' | 'accepted' | 'refused';
  code: string | null;
}

export interface TokenRecord {
  token_id: string;
  plc: PlcJson;
  updated_at: number;
  /** issued here / received here */
  origin: 'issued' | 'received';
  registered: boolean;
  server_status: string | null;
  redeem: RedeemRecord | null;
}
