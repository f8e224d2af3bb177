-- The PLC workflow's status search attribute follows the PLC's first hop (ISSUED -> TRANSFERRED)
-- through this outbox instead of a Temporal call on the transfer route: the route queues a row
-- in the same statement that appends the records, and a dispatcher in each API process signals
-- the workflow after the answer (docs/plc.md, "Status in the Temporal UI"). One row per PLC at
-- most: a newer status replaces a pending one. Rows are claimed with a lease, so several API
-- replicas share the work, and a row whose signal failed is retried with backoff, never dropped.
CREATE TABLE plc_status_outbox (
  token_id        uuid PRIMARY KEY REFERENCES plcs (token_id),
  status          text NOT NULL CHECK (status IN ('ISSUED', 'TRANSFERRED', 'REDEEMED', 'EXPIRED', 'CANCELLED')),
  chain_length    integer NOT NULL CHECK (chain_length BETWEEN 0 AND 64),
  enqueued_at     timestamptz NOT NULL DEFAULT now(),
  -- Raised each time the row is queued again, so a dispatcher deletes only what it delivered.
  revision        bigint NOT NULL DEFAULT 1,
  attempts        integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_error      text CHECK (char_length(last_error) <= 500)
);
CREATE INDEX plc_status_outbox_due ON plc_status_outbox (next_attempt_at);
