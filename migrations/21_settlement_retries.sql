-- An operator's retry of a settlement (docs/operations-console.md, "Retrying a settlement"), and
-- the lookups the console makes by PLC.
--
-- * redemptions.payout_attempt: the redemption's current payout attempt. Attempt 1 keeps the
--   gateway idempotency key `transfer:<redemption_id>`; attempt n > 1 uses
--   `transfer:<redemption_id>:attempt-<n>`. A new attempt is started only when the previous one
--   is known dead (the gateway refused to create it), so a redemption can never have two live
--   transfers.
-- * redemptions.payout_error: why the current attempt is stuck for a reason a retry can fix (the
--   gateway was unreachable through all of the payout's retries, or refused it for a transient
--   cause such as the platform's own gateway balance); null when none.
-- * redemption_payout_attempts: every attempt that was closed, with its key, its transfer if any
--   and what ended it.
-- * redemption_retries: every retry an operator asked for: who, why, when, and the outcome.

ALTER TABLE redemptions
  ADD COLUMN payout_attempt integer NOT NULL DEFAULT 1 CHECK (payout_attempt BETWEEN 1 AND 50),
  ADD COLUMN payout_error text CHECK (char_length(payout_error) <= 500),
  -- When the current attempt began (null: attempt 1, which began when the redemption was opened).
  ADD COLUMN payout_started_at timestamptz;

CREATE TABLE redemption_payout_attempts (
  redemption_id       uuid NOT NULL REFERENCES redemptions (id),
  attempt             integer NOT NULL CHECK (attempt BETWEEN 1 AND 50),
  idempotency_key     text NOT NULL UNIQUE CHECK (char_length(idempotency_key) <= 200),
  gateway_transfer_id text,
  gateway_status      text CHECK (char_length(gateway_status) <= 100),
  closed_reason       text NOT NULL CHECK (char_length(closed_reason) <= 500),
  -- The retry that closed it.
  retry_id            uuid NOT NULL,
  closed_at           timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (redemption_id, attempt)
);

CREATE TABLE redemption_retries (
  id              uuid PRIMARY KEY,
  redemption_id   uuid NOT NULL REFERENCES redemptions (id),
  requested_by    text NOT NULL CHECK (char_length(requested_by) BETWEEN 1 AND 100),
  requested_by_id uuid,
  reason          text NOT NULL CHECK (char_length(reason) BETWEEN 3 AND 500),
  requested_at    timestamptz NOT NULL DEFAULT now(),
  -- Null while the retry runs. REFUSED: answered 409 before anything was asked (final or not
  -- stalled); ERROR: the workflow could not be reached.
  outcome         text CHECK (outcome IN ('SETTLED', 'FAILED', 'NEW_ATTEMPT', 'STILL_PENDING', 'GATEWAY_UNAVAILABLE',
                                          'ALREADY_SETTLED', 'ALREADY_FAILED', 'REFUSED', 'ERROR')),
  detail          text CHECK (char_length(detail) <= 1000),
  attempt         integer,
  gateway_status  text CHECK (char_length(gateway_status) <= 100),
  finished_at     timestamptz,
  CHECK ((outcome IS NULL) = (finished_at IS NULL))
);
CREATE INDEX redemption_retries_redemption ON redemption_retries (redemption_id, requested_at DESC);

-- The console finds a PLC's redemptions and risk flags (fork evidence) by token id.
CREATE INDEX redemptions_token ON redemptions (token_id, created_at DESC);
CREATE INDEX risk_flags_token ON risk_flags (token_id) WHERE token_id IS NOT NULL;
