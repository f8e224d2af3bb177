-- The gateway audit (issue 17, docs/reconciliation.md "The gateway audit"): a reconcile tool that
-- pages through the gateway's own lists of transfers (payouts) and payments (cash-in) and joins
-- them with our redemptions, charges and ledger. Whatever does not agree is a finding: an item of
-- the run with its evidence, repaired where a repair is safe and documented, otherwise raised for
-- a person as a GATEWAY_AUDIT_MISMATCH risk flag.

ALTER TABLE risk_flags
  DROP CONSTRAINT risk_flags_flag_type_check,
  ADD CONSTRAINT risk_flags_flag_type_check
    CHECK (flag_type IN ('DOUBLE_SPEND_FORK', 'DOUBLE_REDEMPTION_ATTEMPT', 'OVERDUE_EXPIRY', 'WEBHOOK_CONTRADICTS_GATEWAY',
                         'GATEWAY_AUDIT_MISMATCH'));

-- A finding is an item of its own kind (GATEWAY_FINDING). It is about a gateway transfer or
-- payment and our rows, not about one balance snapshot: the bucket columns say which bucket it
-- concerns when one does (an issuer's PROMISED for a payout the repair books), and are empty
-- otherwise; `finding` names the mismatch and `evidence` holds both sides as they were read.
ALTER TABLE reconciliation_items
  DROP CONSTRAINT reconciliation_items_action_check,
  ADD CONSTRAINT reconciliation_items_action_check CHECK (action IN ('SNAPSHOT_CORRECTION', 'COMPENSATING_POSTING', 'GATEWAY_FINDING')),
  ALTER COLUMN owner_id DROP NOT NULL,
  ALTER COLUMN bucket DROP NOT NULL,
  ALTER COLUMN snapshot_minor DROP NOT NULL,
  ALTER COLUMN computed_minor DROP NOT NULL,
  ADD COLUMN finding text CHECK (finding ~ '^[A-Z][A-Z_]{2,63}$'),
  ADD COLUMN evidence jsonb,
  ADD CONSTRAINT reconciliation_items_finding_action_check CHECK ((action = 'GATEWAY_FINDING') = (finding IS NOT NULL)),
  ADD CONSTRAINT reconciliation_items_bucket_item_check
    CHECK (action = 'GATEWAY_FINDING' OR (owner_id IS NOT NULL AND bucket IS NOT NULL AND snapshot_minor IS NOT NULL AND computed_minor IS NOT NULL)),
  -- A posting has its amount, a snapshot correction none; a finding may name the amount at stake.
  DROP CONSTRAINT reconciliation_items_check,
  ADD CONSTRAINT reconciliation_items_check
    CHECK ((action <> 'COMPENSATING_POSTING' OR amount_minor IS NOT NULL) AND (action <> 'SNAPSHOT_CORRECTION' OR amount_minor IS NULL)),
  -- A repaired finding names the booking that repaired it, as a fixed posting does.
  DROP CONSTRAINT reconciliation_items_check1,
  ADD CONSTRAINT reconciliation_items_check1 CHECK (action = 'SNAPSHOT_CORRECTION' OR status <> 'FIXED' OR transaction_id IS NOT NULL);

-- What one audit run read from the gateway: each transfer and payment of its window, as listed,
-- with what the gateway adapter says its status means (`outcome`: paid, failed, open). The run
-- joins these rows with ours in SQL; candidates are read again from the gateway before they
-- become findings. The rows are the run's scratch: its last phase deletes them (and those of
-- runs that ended without getting there).
CREATE TABLE gateway_audit_objects (
  run_id             uuid NOT NULL REFERENCES reconciliation_runs (id),
  kind               text NOT NULL CHECK (kind IN ('transfer', 'payment')),
  gateway_id         text NOT NULL CHECK (char_length(gateway_id) BETWEEN 1 AND 100),
  status             text NOT NULL CHECK (char_length(status) BETWEEN 1 AND 40),
  outcome            text NOT NULL CHECK (outcome IN ('paid', 'failed', 'open')),
  amount_minor       bigint NOT NULL CHECK (amount_minor >= 0),
  external_reference text CHECK (char_length(external_reference) <= 255),
  date_created       text NOT NULL CHECK (char_length(date_created) <= 40),
  PRIMARY KEY (run_id, kind, gateway_id)
);
CREATE INDEX gateway_audit_objects_reference ON gateway_audit_objects (run_id, kind, external_reference);

-- A PLC paid twice is found through its redemptions: redemptions_token (migration 21) serves it.
