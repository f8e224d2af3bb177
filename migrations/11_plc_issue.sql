-- PLC issue in one round trip. (It depends on migrations 2, 4 and 8, and on migration 10 only in
-- that ledger_post_legs kept its text[] parameters there.)
-- The issue transaction (db/plcs.ts `issuePlc`) ran 8 statements on
-- one connection: BEGIN, the existing-PLC read, the issuer account upsert, its row lock, the daily
-- sum, the posting (ledger_post_legs), the PLC insert and COMMIT. On the create path of the API
-- that was about 9 ms of a local activity at 2 clients (docs/benchmarks.md, "Protocol"). This
-- function does the same steps in the same order under the same locks, in the caller's statement
-- (autocommit: one implicit transaction, so a refusal raised here leaves nothing behind). The
-- posting still goes through ledger_post_legs, with the legs the caller built and ordered
-- (src/ledger/money-model.ts, db/ledger.ts), so the money model stays in TypeScript.
--
-- Refusals are raised with their own SQLSTATEs, mapped to domain errors by db/plcs.ts:
--   PL101 PLC_ALREADY_EXISTS        another PLC (another commitment) holds this token id
--   PL102 PLC_AMOUNT_ABOVE_MAXIMUM  DETAIL: {"amount_max_minor": "..."}
--   PL103 ACCOUNT_FROZEN            the issuer account is frozen (DETAIL: the owner id)
--   PL104 PLC_DAILY_LIMIT_EXCEEDED  DETAIL: {"daily_limit_minor": "...", "issued_last_24h_minor": "..."}
-- and ledger_post_legs raises its own (PL001 insufficient funds, ...).
CREATE FUNCTION plc_issue(
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
  p_amounts bigint[]
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
  status_changed_at timestamptz
) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  -- The issuer's ledger account is the one owned by its public key (docs/plc.md).
  v_owner text := p_issuer_pubkey;
  v_existing_hash text;
  v_account_status text;
  v_issued_today bigint;
  v_tx uuid;
BEGIN
  SELECT p.commitment_hash INTO v_existing_hash FROM plcs p WHERE p.token_id = p_token_id;
  IF FOUND THEN
    IF v_existing_hash <> p_commitment_hash THEN
      RAISE EXCEPTION USING ERRCODE = 'PL101', MESSAGE = 'PLC_ALREADY_EXISTS', DETAIL = p_token_id::text;
    END IF;
    -- A retry of the same PLC: the stored row, nothing booked again.
    RETURN QUERY
    SELECT false, p.token_id, p.version, p.issuer_pubkey, p.issuer_owner_id, p.amount_minor, p.currency, p.created_at, p.created_at_ms,
           p.expires_at, p.expires_at_ms, p.nonce, p.commitment_hash, p.signature, p.status, p.chain_length, p.head_hash,
           p.bearer_pubkey, p.device_id, p.redemption_id, p.issue_tx_id, p.final_tx_id, p.settlement_tx_id, p.registered_at,
           p.status_changed_at
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
  RETURN QUERY
  INSERT INTO plcs AS p (token_id, version, issuer_pubkey, issuer_owner_id, amount_minor, currency, created_at, created_at_ms,
                         expires_at, expires_at_ms, nonce, commitment_hash, signature, status, chain_length, head_hash,
                         bearer_pubkey, device_id, issue_tx_id)
  VALUES (p_token_id, '2.0', p_issuer_pubkey, v_owner, p_amount_minor, p_currency,
          to_timestamp(p_created_at_ms::double precision / 1000), p_created_at_ms,
          to_timestamp(p_expires_at_ms::double precision / 1000), p_expires_at_ms,
          p_nonce, p_commitment_hash, p_signature, 'ISSUED', 0, p_commitment_hash, p_issuer_pubkey, p_device_id, v_tx)
  RETURNING true, p.token_id, p.version, p.issuer_pubkey, p.issuer_owner_id, p.amount_minor, p.currency, p.created_at, p.created_at_ms,
         p.expires_at, p.expires_at_ms, p.nonce, p.commitment_hash, p.signature, p.status, p.chain_length, p.head_hash,
         p.bearer_pubkey, p.device_id, p.redemption_id, p.issue_tx_id, p.final_tx_id, p.settlement_tx_id, p.registered_at,
         p.status_changed_at;
END;
$$;
