-- The service's issue receipts (docs/protocol.md section 19): the signature the service gives a
-- PLC once its create has reserved the amount, served again with the PLC (the create's retry,
-- `GET /api/v1/plc/{token_id}/json`) so the bearer's copy always carries the same bytes.
--
-- A table of its own rather than a column of plcs: writing a receipt then touches no plcs row
-- (whose updates fire the operators' statement triggers and whose hops are the hot path), and the
-- first receipt written for a PLC is the one kept (INSERT ... ON CONFLICT DO NOTHING).

CREATE TABLE plc_issue_receipts (
  token_id       uuid PRIMARY KEY REFERENCES plcs (token_id),
  -- The 137 receipt bytes in lowercase hex: format 0x01, service key, commitment hash, issued_at, signature.
  receipt        text NOT NULL CHECK (char_length(receipt) = 274 AND receipt !~ '[^0-9a-f]' AND left(receipt, 2) = '01'),
  -- The key that signed it, for a rotation's or a revocation's accounting (which receipts a key made).
  service_pubkey text NOT NULL CHECK (char_length(service_pubkey) = 64 AND service_pubkey !~ '[^0-9a-f]'),
  issued_at      timestamptz NOT NULL
);
CREATE INDEX plc_issue_receipts_by_key ON plc_issue_receipts (service_pubkey, issued_at);

-- The receipt keys the signed blocklist publishes (format v2, docs/protocol.md 19.4), as the
-- current version carries them: canonical JSON, '' before the first publication. A change of the
-- configured keys is a new version of the list (services/blocklist.ts), so a version's bytes never
-- change and a wallet refuses the older list that still trusted a revoked key.
ALTER TABLE blocklist_state ADD COLUMN receipt_keys text NOT NULL DEFAULT '';
