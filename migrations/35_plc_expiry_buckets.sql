-- Issue 38: a PLC's life without a workflow of its own (docs/plc.md, "Expiry by time buckets").
--
-- A create is one statement on the request path: plc_issue_bucketed does what plc_issue
-- (migration 11) does, in the same order under the same locks, and in the same implicit
-- transaction stores the PLC's expiry due time, keeps its issue receipt (signed by the API before
-- the call, kept only when the reservation is booked) and registers its expiry bucket. No
-- Temporal call: PLCs are expired by one workflow per minute of expiry time
-- (`plc-expiry-<bucket>`, workflows/plc-expiry.ts), started once per bucket.
--
-- plcs.expiry_due_at: when the PLC falls due (expires_at plus the clock tolerance, or a test's
-- override). NULL for a PLC issued before this migration: its own `plc-<token_id>` workflow
-- expires it, as before.
ALTER TABLE plcs ADD COLUMN expiry_due_at timestamptz;
-- What a bucket workflow and the sweep look up: the live PLCs by due time.
CREATE INDEX plcs_live_by_expiry_due ON plcs (expiry_due_at) WHERE status IN ('ISSUED', 'TRANSFERRED') AND expiry_due_at IS NOT NULL;

-- One row per bucket of expiry time (a minute by default) that has (or had) a PLC: the bucket's workflow is started
-- once, by the create that inserted the row (started_at set after the start) or, when that caller
-- died between its commit and the start, by the sweep (`plc-expiry-sweep`), which starts every
-- bucket whose started_at is still NULL. done_at: the bucket's workflow found nothing left to do.
CREATE TABLE plc_expiry_buckets (
  bucket_start timestamptz PRIMARY KEY,
  bucket_end   timestamptz NOT NULL CHECK (bucket_end > bucket_start),
  created_at   timestamptz NOT NULL DEFAULT now(),
  started_at   timestamptz,
  done_at      timestamptz
);
CREATE INDEX plc_expiry_buckets_unstarted ON plc_expiry_buckets (created_at) WHERE started_at IS NULL;

CREATE FUNCTION plc_issue_bucketed(
  p_token_id uuid,
  p_issuer_pubkey text,
  p_amount_minor bigint,
  p_currency text,
  p_created_at_ms bigint,
  p_expires_at_ms bigint,
  p_nonce text,
  p_commitment_hash text,
  p_signature text,
  p_device_id text,
  p_amount_max_minor bigint,
  p_daily_limit_minor bigint,
  p_tx_type text,
  p_owners text[],
  p_buckets text[],
  p_currencies text[],
  p_amounts bigint[],
  p_expiry_due_at timestamptz,
  p_receipt text,
  p_receipt_pubkey text,
  p_receipt_issued_at timestamptz,
  p_bucket_start timestamptz,
  p_bucket_end timestamptz
) RETURNS TABLE (
  created boolean,
  token_id uuid,
  version text,
  issuer_pubkey text,
  issuer_owner_id text,
  amount_minor bigint,
  currency text,
  created_at timestamptz,
  created_at_ms bigint,
  expires_at timestamptz,
  expires_at_ms bigint,
  nonce text,
  commitment_hash text,
  signature text,
  status text,
  chain_length integer,
  head_hash text,
  bearer_pubkey text,
  device_id text,
  redemption_id uuid,
  issue_tx_id uuid,
  final_tx_id uuid,
  settlement_tx_id uuid,
  registered_at timestamptz,
  status_changed_at timestamptz,
  expiry_due_at timestamptz,
  receipt text,
  bucket_new boolean
) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  -- The issuer's ledger account is the one owned by its public key (docs/plc.md).
  v_owner text := p_issuer_pubkey;
  v_existing_hash text;
  v_account_status text;
  v_issued_today bigint;
  v_tx uuid;
  v_receipt text;
  v_bucket_new boolean := false;
BEGIN
  SELECT p.commitment_hash INTO v_existing_hash FROM plcs p WHERE p.token_id = p_token_id;
  IF FOUND THEN
    IF v_existing_hash <> p_commitment_hash THEN
      RAISE EXCEPTION USING ERRCODE = 'PL101', MESSAGE = 'PLC_ALREADY_EXISTS', DETAIL = p_token_id::text;
    END IF;
    -- A retry of the same PLC: the stored row, nothing booked again; the receipt kept, or this
    -- one kept now (a PLC whose first answer was lost before its receipt was kept).
    INSERT INTO plc_issue_receipts AS r (token_id, receipt, service_pubkey, issued_at)
    VALUES (p_token_id, p_receipt, p_receipt_pubkey, p_receipt_issued_at) ON CONFLICT (token_id) DO NOTHING;
    SELECT r.receipt INTO STRICT v_receipt FROM plc_issue_receipts r WHERE r.token_id = p_token_id;
    RETURN QUERY
    SELECT false, p.token_id, p.version, p.issuer_pubkey, p.issuer_owner_id, p.amount_minor, p.currency, p.created_at, p.created_at_ms,
           p.expires_at, p.expires_at_ms, p.nonce, p.commitment_hash, p.signature, p.status, p.chain_length, p.head_hash,
           p.bearer_pubkey, p.device_id, p.redemption_id, p.issue_tx_id, p.final_tx_id, p.settlement_tx_id, p.registered_at,
           p.status_changed_at, p.expiry_due_at, v_receipt, false
      FROM plcs p WHERE p.token_id = p_token_id;
    RETURN;
  END IF;
  IF p_amount_minor > p_amount_max_minor THEN
    RAISE EXCEPTION USING ERRCODE = 'PL102', MESSAGE = 'PLC_AMOUNT_ABOVE_MAXIMUM',
      DETAIL = jsonb_build_object('amount_max_minor', p_amount_max_minor::text)::text;
  END IF;

  -- The issuer's account row serialises this issuer's creates, so the daily limit holds under
  -- concurrency; it is created on first use like every ledger account.
  INSERT INTO ledger_accounts (owner_id, kind) VALUES (v_owner, 'user') ON CONFLICT (owner_id) DO NOTHING;
  SELECT a.status INTO STRICT v_account_status FROM ledger_accounts a WHERE a.owner_id = v_owner FOR UPDATE;
  IF v_account_status <> 'ACTIVE' THEN
    RAISE EXCEPTION USING ERRCODE = 'PL103', MESSAGE = 'ACCOUNT_FROZEN', DETAIL = v_owner;
  END IF;
  -- Read after the lock: this statement's snapshot sees every create of this issuer that
  -- committed before the lock was granted (READ COMMITTED, one snapshot per statement).
  SELECT coalesce(sum(p.amount_minor), 0)::bigint INTO v_issued_today FROM plcs p
   WHERE p.issuer_owner_id = v_owner AND p.currency = p_currency AND p.registered_at > now() - interval '24 hours';
  IF v_issued_today + p_amount_minor > p_daily_limit_minor THEN
    RAISE EXCEPTION USING ERRCODE = 'PL104', MESSAGE = 'PLC_DAILY_LIMIT_EXCEEDED',
      DETAIL = jsonb_build_object('daily_limit_minor', p_daily_limit_minor::text, 'issued_last_24h_minor', v_issued_today::text)::text;
  END IF;

  SELECT l.transaction_id INTO STRICT v_tx
    FROM ledger_post_legs('plc:' || p_token_id::text || ':issue', p_tx_type, 'plc', p_token_id::text, NULL,
                          p_owners, p_buckets, p_currencies, p_amounts, false) l;
  -- The PLC's expiry bucket (the bucket of due time its expiry falls in, PLC_EXPIRY_BUCKET_MS
  -- wide): the first create in a bucket inserts its row, and that create's caller starts the
  -- bucket's workflow after the commit; a row never started is found by the sweep (docs/plc.md,
  -- "Expiry by time buckets").
  INSERT INTO plc_expiry_buckets (bucket_start, bucket_end) VALUES (p_bucket_start, p_bucket_end) ON CONFLICT (bucket_start) DO NOTHING;
  v_bucket_new := FOUND;
  INSERT INTO plcs AS p (token_id, version, issuer_pubkey, issuer_owner_id, amount_minor, currency, created_at, created_at_ms,
                         expires_at, expires_at_ms, nonce, commitment_hash, signature, status, chain_length, head_hash,
                         bearer_pubkey, device_id, issue_tx_id, expiry_due_at)
  VALUES (p_token_id, '2.0', p_issuer_pubkey, v_owner, p_amount_minor, p_currency,
          to_timestamp(p_created_at_ms::double precision / 1000), p_created_at_ms,
          to_timestamp(p_expires_at_ms::double precision / 1000), p_expires_at_ms,
          p_nonce, p_commitment_hash, p_signature, 'ISSUED', 0, p_commitment_hash, p_issuer_pubkey, p_device_id, v_tx, p_expiry_due_at);
  INSERT INTO plc_issue_receipts (token_id, receipt, service_pubkey, issued_at) VALUES (p_token_id, p_receipt, p_receipt_pubkey, p_receipt_issued_at);
  -- The operation log's entry of the create (the `issuePlc` activity wrote it before).
  INSERT INTO operation_log (operation_type, step, status, owner_id, reference_id, duration_ms, finished_at)
  VALUES ('PLC_CREATE', 'plc_issue', 'SUCCEEDED', left(v_owner, 200), p_token_id::text,
          (extract(epoch FROM clock_timestamp() - now()) * 1000)::int, clock_timestamp());
  RETURN QUERY
  SELECT true, p.token_id, p.version, p.issuer_pubkey, p.issuer_owner_id, p.amount_minor, p.currency, p.created_at, p.created_at_ms,
         p.expires_at, p.expires_at_ms, p.nonce, p.commitment_hash, p.signature, p.status, p.chain_length, p.head_hash,
         p.bearer_pubkey, p.device_id, p.redemption_id, p.issue_tx_id, p.final_tx_id, p.settlement_tx_id, p.registered_at,
         p.status_changed_at, p.expiry_due_at, p_receipt, v_bucket_new
    FROM plcs p WHERE p.token_id = p_token_id;
END;
$$;
