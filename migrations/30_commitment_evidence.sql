-- Issue 32 (docs/plc.md, "The registered commitment binds every path"; docs/protocol.md section
-- 8a): the proofs of an issuer's cheat the server keeps, the flags they raise and the blocks they
-- make, and the operator's compensation of a bearer booked against that evidence.

ALTER TABLE risk_flags
  DROP CONSTRAINT risk_flags_flag_type_check,
  ADD CONSTRAINT risk_flags_flag_type_check
    CHECK (flag_type IN ('DOUBLE_SPEND_FORK', 'DOUBLE_REDEMPTION_ATTEMPT', 'OVERDUE_EXPIRY', 'WEBHOOK_CONTRADICTS_GATEWAY',
                         'GATEWAY_AUDIT_MISMATCH', 'ISSUER_DOUBLE_ISSUE', 'CANCEL_AFTER_TRANSFER'));

-- A key is blocked for a proven fork, for a proven double issue (two commitments under one token
-- id, both signed by the issuer), or for a proven cancel after a transfer (the issuer signed the
-- PLC's first hop, then cancelled it online).
ALTER TABLE key_blocks
  DROP CONSTRAINT key_blocks_reason_check,
  ADD CONSTRAINT key_blocks_reason_check CHECK (reason IN ('DOUBLE_SPEND_FORK', 'ISSUER_DOUBLE_ISSUE', 'CANCEL_AFTER_TRANSFER'));

CREATE TABLE plc_evidence (
  id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  kind               text NOT NULL CHECK (kind IN ('ISSUER_DOUBLE_ISSUE', 'CANCEL_AFTER_TRANSFER')),
  token_id           uuid NOT NULL REFERENCES plcs (token_id),
  -- The issuer whose signatures prove the cheat.
  culprit_pubkey     text NOT NULL CHECK (culprit_pubkey ~ '^[0-9a-f]{64}$'),
  -- One incident, one row: the flag's dedupe key names it (src/plc/commitment-binding.ts).
  risk_flag_id       uuid NOT NULL UNIQUE REFERENCES risk_flags (id),
  -- The proof, checkable offline: both canonical commitments and signatures (double issue), or
  -- the presented chain's records in the protocol's JSON form (cancel after transfer).
  evidence           jsonb NOT NULL,
  -- Cancel after transfer: who holds the PLC by the longest chain shown (the bearer an operator
  -- may compensate), with the registered amount.
  bearer_pubkey      text CHECK (bearer_pubkey ~ '^[0-9a-f]{64}$'),
  amount_minor       bigint NOT NULL CHECK (amount_minor > 0),
  currency           text NOT NULL CHECK (currency IN ('BRL', 'USD', 'EUR')),
  route              text NOT NULL CHECK (char_length(route) BETWEEN 1 AND 64),
  device_id          text NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  -- The operator's compensation (reconcile tool compensate-cancelled-bearers), booked once.
  compensation_tx_id uuid REFERENCES ledger_transactions (id),
  compensated_minor  bigint CHECK (compensated_minor > 0),
  CHECK (kind <> 'CANCEL_AFTER_TRANSFER' OR bearer_pubkey IS NOT NULL),
  CHECK ((compensation_tx_id IS NULL) = (compensated_minor IS NULL)),
  CHECK (kind = 'CANCEL_AFTER_TRANSFER' OR compensation_tx_id IS NULL)
);
CREATE INDEX plc_evidence_token ON plc_evidence (token_id);
CREATE INDEX plc_evidence_uncompensated ON plc_evidence (kind, id) WHERE compensation_tx_id IS NULL;
