-- Double-entry ledger (DESIGN.md section 3). The database enforces what must never be false:
-- every transaction balances per currency (deferred constraint trigger), no user bucket goes
-- negative (CHECK on the snapshot row), an idempotency key books once (UNIQUE), and history is
-- append-only (no UPDATE or DELETE of transactions or entries). All writes go through
-- ledger_post(), which locks snapshot rows in one fixed order so concurrent postings never
-- deadlock.

CREATE TABLE ledger_accounts (
  id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  owner_id   text NOT NULL UNIQUE,
  kind       text NOT NULL CHECK (kind IN ('user', 'system')),
  status     text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'FROZEN')),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((kind = 'system') = (owner_id LIKE 'system:%')),
  CHECK (kind = 'system' OR owner_id ~ '^[A-Za-z0-9._-]{1,128}$')
);

INSERT INTO ledger_accounts (owner_id, kind) VALUES ('system:world', 'system'), ('system:fees', 'system');

CREATE TABLE ledger_balances (
  account_id   uuid NOT NULL REFERENCES ledger_accounts (id),
  bucket       text NOT NULL CHECK (bucket IN ('AVAILABLE', 'HELD', 'PENDING', 'PROMISED')),
  currency     text NOT NULL CHECK (currency IN ('BRL', 'USD', 'EUR')),
  -- Copied from the account so the non-negative rule is a plain CHECK on this row.
  account_kind text NOT NULL CHECK (account_kind IN ('user', 'system')),
  amount_minor bigint NOT NULL DEFAULT 0,
  version      bigint NOT NULL DEFAULT 0,
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, bucket, currency),
  CONSTRAINT ledger_balances_user_non_negative CHECK (account_kind = 'system' OR amount_minor >= 0)
);

CREATE TABLE ledger_transactions (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  seq             bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  idempotency_key text NOT NULL UNIQUE CHECK (char_length(idempotency_key) BETWEEN 1 AND 300),
  -- md5 of the posting's content, so a retry with the same key but other content is refused.
  request_hash    text NOT NULL,
  tx_type         text NOT NULL CHECK (tx_type IN (
                    'DEPOSIT', 'CHARGE_CREATED', 'CHARGE_SETTLED', 'CHARGE_FAILED',
                    'PLC_ISSUED', 'PLC_CANCELLED', 'PLC_EXPIRED',
                    'REDEEM_REQUESTED', 'REDEEM_SETTLED', 'REDEEM_FAILED',
                    'RISK_HOLD', 'RISK_RELEASE', 'RECONCILIATION')),
  reference_type  text CHECK (char_length(reference_type) <= 64),
  reference_id    text CHECK (char_length(reference_id) <= 200),
  description     text CHECK (char_length(description) <= 500),
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_transactions_type ON ledger_transactions (tx_type, seq DESC);
CREATE INDEX ledger_transactions_reference ON ledger_transactions (reference_type, reference_id);

CREATE TABLE ledger_entries (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  transaction_id uuid NOT NULL REFERENCES ledger_transactions (id),
  account_id     uuid NOT NULL REFERENCES ledger_accounts (id),
  bucket         text NOT NULL CHECK (bucket IN ('AVAILABLE', 'HELD', 'PENDING', 'PROMISED')),
  currency       text NOT NULL CHECK (currency IN ('BRL', 'USD', 'EUR')),
  amount_minor   bigint NOT NULL CHECK (amount_minor <> 0)
);
CREATE INDEX ledger_entries_transaction ON ledger_entries (transaction_id);
CREATE INDEX ledger_entries_account ON ledger_entries (account_id, id DESC);

-- Balanced per currency, checked at COMMIT for every transaction that gained an entry.
CREATE FUNCTION ledger_check_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  unbalanced text;
  entry_count integer;
BEGIN
  SELECT count(*) INTO entry_count FROM ledger_entries WHERE transaction_id = NEW.transaction_id;
  SELECT string_agg(currency || '=' || total::text, ', ') INTO unbalanced
    FROM (SELECT currency, sum(amount_minor) AS total FROM ledger_entries
           WHERE transaction_id = NEW.transaction_id GROUP BY currency HAVING sum(amount_minor) <> 0) s;
  IF unbalanced IS NOT NULL OR entry_count < 2 THEN
    RAISE EXCEPTION USING ERRCODE = 'PL004', MESSAGE = 'LEDGER_UNBALANCED',
      DETAIL = format('transaction %s: sums %s, %s entries', NEW.transaction_id, coalesce(unbalanced, 'zero'), entry_count);
  END IF;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER ledger_entries_balanced
  AFTER INSERT ON ledger_entries DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION ledger_check_balanced();

-- History is never rewritten: corrections are new transactions.
CREATE FUNCTION ledger_forbid_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'PL006', MESSAGE = 'LEDGER_APPEND_ONLY',
    DETAIL = format('%s on %s is not allowed', TG_OP, TG_TABLE_NAME);
END $$;
CREATE TRIGGER ledger_transactions_append_only BEFORE UPDATE OR DELETE ON ledger_transactions
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_rewrite();
CREATE TRIGGER ledger_entries_append_only BEFORE UPDATE OR DELETE ON ledger_entries
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_rewrite();
CREATE TRIGGER ledger_transactions_no_truncate BEFORE TRUNCATE ON ledger_transactions
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_rewrite();
CREATE TRIGGER ledger_entries_no_truncate BEFORE TRUNCATE ON ledger_entries
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_rewrite();

-- The one posting primitive. p_entries: [{"owner_id", "bucket", "currency", "amount_minor"}]
-- with amount_minor a signed integer (as JSON string or number). Runs inside the caller's
-- transaction, so the state change the money pays for commits with it or not at all.
-- Returns the transaction id and whether this call created it (false: an idempotent replay).
-- Errors (SQLSTATE, MESSAGE): PL001 INSUFFICIENT_FUNDS, PL002 ACCOUNT_FROZEN,
-- PL003 IDEMPOTENCY_KEY_REUSED, PL004 LEDGER_UNBALANCED, PL005 LEDGER_INVALID_POSTING.
CREATE FUNCTION ledger_post(
  p_idempotency_key text,
  p_tx_type text,
  p_reference_type text,
  p_reference_id text,
  p_description text,
  p_entries jsonb,
  p_allow_frozen boolean DEFAULT false
) RETURNS TABLE (transaction_id uuid, created boolean) LANGUAGE plpgsql AS $$
DECLARE
  v_hash text;
  v_tx uuid;
  v_existing_hash text;
  r record;
BEGIN
  IF jsonb_typeof(p_entries) <> 'array' OR jsonb_array_length(p_entries) < 2 OR jsonb_array_length(p_entries) > 16 THEN
    RAISE EXCEPTION USING ERRCODE = 'PL005', MESSAGE = 'LEDGER_INVALID_POSTING', DETAIL = 'between 2 and 16 entries';
  END IF;

  v_hash := md5(concat_ws('|', p_tx_type, p_reference_type, p_reference_id, (
    SELECT string_agg(concat_ws(':', e->>'owner_id', e->>'bucket', e->>'currency', e->>'amount_minor'), ',' ORDER BY
      e->>'owner_id', e->>'bucket', e->>'currency', e->>'amount_minor')
    FROM jsonb_array_elements(p_entries) e)));

  INSERT INTO ledger_transactions (idempotency_key, request_hash, tx_type, reference_type, reference_id, description)
  VALUES (p_idempotency_key, v_hash, p_tx_type, p_reference_type, p_reference_id, p_description)
  ON CONFLICT (idempotency_key) DO NOTHING
  RETURNING id INTO v_tx;

  IF v_tx IS NULL THEN
    SELECT t.id, t.request_hash INTO v_tx, v_existing_hash FROM ledger_transactions t WHERE t.idempotency_key = p_idempotency_key;
    IF v_existing_hash <> v_hash THEN
      RAISE EXCEPTION USING ERRCODE = 'PL003', MESSAGE = 'IDEMPOTENCY_KEY_REUSED',
        DETAIL = format('idempotency key %s was used for another posting', p_idempotency_key);
    END IF;
    RETURN QUERY SELECT v_tx, false;
    RETURN;
  END IF;

  -- Accounts are created on first use; system accounts already exist.
  INSERT INTO ledger_accounts (owner_id, kind)
  SELECT DISTINCT e->>'owner_id', 'user' FROM jsonb_array_elements(p_entries) e
   WHERE e->>'owner_id' NOT LIKE 'system:%'
  ON CONFLICT (owner_id) DO NOTHING;

  IF (SELECT count(*) FROM jsonb_array_elements(p_entries) e JOIN ledger_accounts a ON a.owner_id = e->>'owner_id')
     <> jsonb_array_length(p_entries) THEN
    RAISE EXCEPTION USING ERRCODE = 'PL005', MESSAGE = 'LEDGER_INVALID_POSTING', DETAIL = 'unknown system account';
  END IF;
  IF EXISTS (SELECT 1 FROM jsonb_array_elements(p_entries) e WHERE (e->>'amount_minor')::bigint = 0) THEN
    RAISE EXCEPTION USING ERRCODE = 'PL005', MESSAGE = 'LEDGER_INVALID_POSTING', DETAIL = 'an entry of zero';
  END IF;

  -- A frozen account can receive but not spend: refuse any net outflow from it.
  IF NOT p_allow_frozen THEN
    SELECT a.owner_id INTO r FROM jsonb_array_elements(p_entries) e JOIN ledger_accounts a ON a.owner_id = e->>'owner_id'
     WHERE a.status = 'FROZEN' AND a.kind = 'user'
     GROUP BY a.owner_id HAVING sum((e->>'amount_minor')::bigint) < 0 LIMIT 1;
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'PL002', MESSAGE = 'ACCOUNT_FROZEN', DETAIL = r.owner_id;
    END IF;
  END IF;

  -- Lock and move snapshot rows in one fixed order (account, bucket, currency): no deadlocks.
  FOR r IN SELECT a.id AS account_id, a.owner_id, a.kind, e->>'bucket' AS bucket, e->>'currency' AS currency,
                  sum((e->>'amount_minor')::bigint) AS delta
             FROM jsonb_array_elements(p_entries) e JOIN ledger_accounts a ON a.owner_id = e->>'owner_id'
            GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 4, 5 LOOP
    IF r.delta < 0 THEN
      UPDATE ledger_balances b SET amount_minor = b.amount_minor + r.delta, version = b.version + 1, updated_at = now()
       WHERE b.account_id = r.account_id AND b.bucket = r.bucket AND b.currency = r.currency
         AND (b.account_kind = 'system' OR b.amount_minor + r.delta >= 0);
      IF NOT FOUND THEN
        IF r.kind = 'system' THEN
          INSERT INTO ledger_balances AS b (account_id, bucket, currency, account_kind, amount_minor, version)
          VALUES (r.account_id, r.bucket, r.currency, 'system', r.delta, 1)
          ON CONFLICT (account_id, bucket, currency) DO UPDATE
            SET amount_minor = b.amount_minor + EXCLUDED.amount_minor, version = b.version + 1, updated_at = now();
        ELSE
          RAISE EXCEPTION USING ERRCODE = 'PL001', MESSAGE = 'INSUFFICIENT_FUNDS',
            DETAIL = json_build_object('owner_id', r.owner_id, 'bucket', r.bucket, 'currency', r.currency,
                                       'requested_minor', (-r.delta)::text)::text;
        END IF;
      END IF;
    ELSIF r.delta > 0 THEN
      INSERT INTO ledger_balances AS b (account_id, bucket, currency, account_kind, amount_minor, version)
      VALUES (r.account_id, r.bucket, r.currency, r.kind, r.delta, 1)
      ON CONFLICT (account_id, bucket, currency) DO UPDATE
        SET amount_minor = b.amount_minor + EXCLUDED.amount_minor, version = b.version + 1, updated_at = now();
    END IF;
  END LOOP;

  INSERT INTO ledger_entries (transaction_id, account_id, bucket, currency, amount_minor)
  SELECT v_tx, a.id, e->>'bucket', e->>'currency', (e->>'amount_minor')::bigint
    FROM jsonb_array_elements(p_entries) e JOIN ledger_accounts a ON a.owner_id = e->>'owner_id';

  RETURN QUERY SELECT v_tx, true;
END $$;

-- Every invariant over the whole ledger, as rows of violations (none when all hold). Used by
-- `ledger verify` and GET /api/v1/admin/ledger/stats.
CREATE FUNCTION ledger_violations(p_limit integer DEFAULT 100)
RETURNS TABLE (kind text, subject text, detail text) LANGUAGE sql STABLE AS $$
  (SELECT 'unbalanced_transaction', t.id::text, string_agg(s.currency || '=' || s.total::text, ', ')
     FROM ledger_transactions t
     JOIN (SELECT transaction_id, currency, sum(amount_minor) AS total FROM ledger_entries
            GROUP BY transaction_id, currency HAVING sum(amount_minor) <> 0) s ON s.transaction_id = t.id
    GROUP BY t.id)
  UNION ALL
  (SELECT 'transaction_without_entries', t.id::text, 'fewer than 2 entries'
     FROM ledger_transactions t
    WHERE (SELECT count(*) FROM ledger_entries e WHERE e.transaction_id = t.id) < 2)
  UNION ALL
  (SELECT 'snapshot_mismatch', a.owner_id || '/' || coalesce(b.bucket, e.bucket) || '/' || coalesce(b.currency, e.currency),
          format('snapshot %s, entries %s', coalesce(b.amount_minor, 0), coalesce(e.total, 0))
     FROM (SELECT account_id, bucket, currency, sum(amount_minor) AS total FROM ledger_entries
            GROUP BY account_id, bucket, currency) e
     FULL JOIN ledger_balances b USING (account_id, bucket, currency)
     JOIN ledger_accounts a ON a.id = coalesce(b.account_id, e.account_id)
    WHERE coalesce(b.amount_minor, 0) <> coalesce(e.total, 0))
  UNION ALL
  (SELECT 'negative_user_bucket', a.owner_id || '/' || b.bucket || '/' || b.currency, b.amount_minor::text
     FROM ledger_balances b JOIN ledger_accounts a ON a.id = b.account_id
    WHERE a.kind = 'user' AND b.amount_minor < 0)
  LIMIT p_limit
$$;
