-- ledger_post, third version: the same rules, at about half the server CPU per posting. Found by
-- profiling the backend under `npm run bench:ledger` (docs/benchmarks.md, "Ledger"):
--  * The legs arrive as four arrays (ledger_post_legs) instead of a JSON document that every
--    posting parsed in a statement of its own. ledger_post(jsonb) stays, as a wrapper.
--  * The request hash is a plain expression in the function: version 2 called a LANGUAGE sql
--    function with a subquery, which PostgreSQL parses, analyses and plans again on every call
--    (14% of the backend's samples). Version 3 hashes the legs in the order given; callers pass
--    them in one canonical order (owner, bucket, currency, amount), as postTransaction and the
--    ledger_post wrapper do. A replay of a transaction booked by version 1 or 2 still matches:
--    the older hashes are computed on the replay path only.
--  * The balance check at COMMIT runs once per ledger transaction instead of once per entry plus
--    once per transaction: the check of the transaction row looks at all its entries and records
--    (transaction-locally) the highest entry id it saw, and an entry's own check is skipped when
--    that check already covered it. An entry added after the check (it has a higher id) is
--    checked again, so nothing unbalanced can commit.
--  * tx_type is an enum instead of a 13-value CHECK, which PostgreSQL re-read and planned for every
--    INSERT; the other CHECKs stay (measured: replacing them with domains gained nothing).
--  * The index on (reference_type, reference_id) goes: every lookup by reference is by
--    reference_id, served by ledger_transactions_reference_id (reference_id, tx_type), and one
--    index fewer is one B-tree insert fewer per posting.

CREATE TYPE ledger_tx_type AS ENUM (
  'DEPOSIT', 'CHARGE_CREATED', 'CHARGE_SETTLED', 'CHARGE_FAILED',
  'PLC_ISSUED', 'PLC_CANCELLED', 'PLC_EXPIRED',
  'REDEEM_REQUESTED', 'REDEEM_SETTLED', 'REDEEM_FAILED',
  'RISK_HOLD', 'RISK_RELEASE', 'RECONCILIATION');
ALTER TABLE ledger_transactions DROP CONSTRAINT ledger_transactions_tx_type_check,
  ALTER COLUMN tx_type TYPE ledger_tx_type USING tx_type::ledger_tx_type;
DROP INDEX ledger_transactions_reference;

CREATE OR REPLACE FUNCTION ledger_post_legs(
  p_idempotency_key text,
  p_tx_type text,
  p_reference_type text,
  p_reference_id text,
  p_description text,
  p_owners text[],
  p_buckets text[],
  p_currencies text[],
  p_amounts bigint[],
  p_allow_frozen boolean DEFAULT false,
  OUT transaction_id uuid,
  OUT created boolean
) LANGUAGE plpgsql AS $$
DECLARE
  v_count integer := coalesce(cardinality(p_owners), 0);
  v_hash text;
  v_tx uuid;
  v_existing text;
  v_entries jsonb;
  v_account uuid[] := '{}';
  v_kind text[] := '{}';
  v_id uuid;
  v_acc_kind text;
  v_acc_status text;
  v_order integer[];
  v_delta bigint;
  i integer;
  j integer;
  k integer;
BEGIN
  IF v_count < 2 OR v_count > 16 OR cardinality(p_buckets) IS DISTINCT FROM v_count
     OR cardinality(p_currencies) IS DISTINCT FROM v_count OR cardinality(p_amounts) IS DISTINCT FROM v_count THEN
    RAISE EXCEPTION USING ERRCODE = 'PL005', MESSAGE = 'LEDGER_INVALID_POSTING', DETAIL = 'between 2 and 16 entries, each with owner, bucket, currency and amount';
  END IF;
  IF 0 = ANY (p_amounts) OR array_position(p_amounts, NULL) IS NOT NULL OR array_position(p_owners, NULL) IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PL005', MESSAGE = 'LEDGER_INVALID_POSTING', DETAIL = 'an entry of zero or without owner';
  END IF;

  v_hash := 'v3:' || md5(jsonb_build_array(p_tx_type, p_reference_type, p_reference_id, p_owners, p_buckets, p_currencies, p_amounts)::text);
  INSERT INTO ledger_transactions (idempotency_key, request_hash, tx_type, reference_type, reference_id, description)
  VALUES (p_idempotency_key, v_hash, p_tx_type::ledger_tx_type, p_reference_type, p_reference_id, p_description)
  ON CONFLICT (idempotency_key) DO NOTHING
  RETURNING id INTO v_tx;
  IF v_tx IS NULL THEN
    SELECT t.id, t.request_hash INTO v_tx, v_existing FROM ledger_transactions t WHERE t.idempotency_key = p_idempotency_key;
    IF v_existing <> v_hash THEN
      -- Booked by an earlier version of this function? Compare with the hash it computed.
      SELECT jsonb_agg(jsonb_build_object('owner_id', u.o, 'bucket', u.b, 'currency', u.c, 'amount_minor', u.m::text))
        INTO v_entries FROM unnest(p_owners, p_buckets, p_currencies, p_amounts) AS u(o, b, c, m);
      IF v_existing IS DISTINCT FROM ledger_request_hash_v2(p_tx_type, p_reference_type, p_reference_id, v_entries)
         AND v_existing IS DISTINCT FROM ledger_request_hash_v1(p_tx_type, p_reference_type, p_reference_id, v_entries) THEN
        RAISE EXCEPTION USING ERRCODE = 'PL003', MESSAGE = 'IDEMPOTENCY_KEY_REUSED',
          DETAIL = format('idempotency key %s was used for another posting', p_idempotency_key);
      END IF;
    END IF;
    transaction_id := v_tx;
    created := false;
    RETURN;
  END IF;

  -- One index lookup per leg (two plain lookups cost less than one statement that aggregates
  -- them); user accounts are created on first use, system ones must exist.
  FOR i IN 1 .. v_count LOOP
    SELECT a.id, a.kind, a.status INTO v_id, v_acc_kind, v_acc_status FROM ledger_accounts a WHERE a.owner_id = p_owners[i];
    IF NOT FOUND THEN
      IF p_owners[i] LIKE 'system:%' THEN
        RAISE EXCEPTION USING ERRCODE = 'PL005', MESSAGE = 'LEDGER_INVALID_POSTING', DETAIL = 'unknown system account ' || p_owners[i];
      END IF;
      INSERT INTO ledger_accounts (owner_id, kind) VALUES (p_owners[i], 'user') ON CONFLICT (owner_id) DO NOTHING;
      SELECT a.id, a.kind, a.status INTO v_id, v_acc_kind, v_acc_status FROM ledger_accounts a WHERE a.owner_id = p_owners[i];
    END IF;
    -- A frozen account can receive but not spend: nothing may leave its AVAILABLE bucket.
    IF v_acc_status = 'FROZEN' AND v_acc_kind = 'user' AND p_buckets[i] = 'AVAILABLE' AND p_amounts[i] < 0 AND NOT p_allow_frozen THEN
      RAISE EXCEPTION USING ERRCODE = 'PL002', MESSAGE = 'ACCOUNT_FROZEN', DETAIL = p_owners[i];
    END IF;
    v_account[i] := v_id;
    v_kind[i] := v_acc_kind;
  END LOOP;

  INSERT INTO ledger_entries (transaction_id, account_id, bucket, currency, amount_minor)
  SELECT v_tx, u.a, u.b, u.c, u.m FROM unnest(v_account, p_buckets, p_currencies, p_amounts) AS u(a, b, c, m);

  -- Lock and move snapshot rows in one fixed order (account, bucket, currency), legs on the same
  -- row merged: no deadlocks. At most 16 legs, so an insertion sort of their positions.
  v_order := ARRAY[1];
  FOR i IN 2 .. v_count LOOP
    v_order := v_order || i;
    j := i;
    WHILE j > 1 AND (v_account[v_order[j - 1]], p_buckets[v_order[j - 1]], p_currencies[v_order[j - 1]])
                  > (v_account[v_order[j]], p_buckets[v_order[j]], p_currencies[v_order[j]]) LOOP
      k := v_order[j - 1];
      v_order[j - 1] := v_order[j];
      v_order[j] := k;
      j := j - 1;
    END LOOP;
  END LOOP;
  i := 1;
  WHILE i <= v_count LOOP
    k := v_order[i];
    v_delta := p_amounts[k];
    WHILE i < v_count AND v_account[v_order[i + 1]] = v_account[k] AND p_buckets[v_order[i + 1]] = p_buckets[k]
          AND p_currencies[v_order[i + 1]] = p_currencies[k] LOOP
      i := i + 1;
      v_delta := v_delta + p_amounts[v_order[i]];
    END LOOP;
    i := i + 1;
    IF v_delta < 0 THEN
      UPDATE ledger_balances b SET amount_minor = b.amount_minor + v_delta, version = b.version + 1, updated_at = now()
       WHERE b.account_id = v_account[k] AND b.bucket = p_buckets[k] AND b.currency = p_currencies[k]
         AND (b.account_kind = 'system' OR b.amount_minor + v_delta >= 0);
      IF NOT FOUND THEN
        IF v_kind[k] = 'system' THEN
          INSERT INTO ledger_balances AS b (account_id, bucket, currency, account_kind, amount_minor, version)
          VALUES (v_account[k], p_buckets[k], p_currencies[k], 'system', v_delta, 1)
          ON CONFLICT (account_id, bucket, currency) DO UPDATE
            SET amount_minor = b.amount_minor + EXCLUDED.amount_minor, version = b.version + 1, updated_at = now();
        ELSE
          RAISE EXCEPTION USING ERRCODE = 'PL001', MESSAGE = 'INSUFFICIENT_FUNDS',
            DETAIL = json_build_object('owner_id', p_owners[k], 'bucket', p_buckets[k], 'currency', p_currencies[k],
                                       'requested_minor', (-v_delta)::text)::text;
        END IF;
      END IF;
    ELSIF v_delta > 0 THEN
      UPDATE ledger_balances b SET amount_minor = b.amount_minor + v_delta, version = b.version + 1, updated_at = now()
       WHERE b.account_id = v_account[k] AND b.bucket = p_buckets[k] AND b.currency = p_currencies[k];
      IF NOT FOUND THEN
        INSERT INTO ledger_balances AS b (account_id, bucket, currency, account_kind, amount_minor, version)
        VALUES (v_account[k], p_buckets[k], p_currencies[k], v_kind[k], v_delta, 1)
        ON CONFLICT (account_id, bucket, currency) DO UPDATE
          SET amount_minor = b.amount_minor + EXCLUDED.amount_minor, version = b.version + 1, updated_at = now();
      END IF;
    END IF;
  END LOOP;

  transaction_id := v_tx;
  created := true;
END $$;

-- The JSON form, kept for SQL callers: [{"owner_id", "bucket", "currency", "amount_minor"}].
CREATE OR REPLACE FUNCTION ledger_post(
  p_idempotency_key text,
  p_tx_type text,
  p_reference_type text,
  p_reference_id text,
  p_description text,
  p_entries jsonb,
  p_allow_frozen boolean DEFAULT false
) RETURNS TABLE (transaction_id uuid, created boolean) LANGUAGE plpgsql AS $$
DECLARE
  v_owners text[];
  v_buckets text[];
  v_currencies text[];
  v_amounts bigint[];
BEGIN
  IF jsonb_typeof(p_entries) IS DISTINCT FROM 'array' THEN
    RAISE EXCEPTION USING ERRCODE = 'PL005', MESSAGE = 'LEDGER_INVALID_POSTING', DETAIL = 'entries must be an array';
  END IF;
  SELECT array_agg(e->>'owner_id' ORDER BY e->>'owner_id' COLLATE "C", e->>'bucket' COLLATE "C", e->>'currency' COLLATE "C", (e->>'amount_minor')::bigint),
         array_agg(e->>'bucket' ORDER BY e->>'owner_id' COLLATE "C", e->>'bucket' COLLATE "C", e->>'currency' COLLATE "C", (e->>'amount_minor')::bigint),
         array_agg(e->>'currency' ORDER BY e->>'owner_id' COLLATE "C", e->>'bucket' COLLATE "C", e->>'currency' COLLATE "C", (e->>'amount_minor')::bigint),
         array_agg((e->>'amount_minor')::bigint ORDER BY e->>'owner_id' COLLATE "C", e->>'bucket' COLLATE "C", e->>'currency' COLLATE "C", (e->>'amount_minor')::bigint)
    INTO v_owners, v_buckets, v_currencies, v_amounts
    FROM jsonb_array_elements(p_entries) AS e;
  RETURN QUERY SELECT * FROM ledger_post_legs(p_idempotency_key, p_tx_type, p_reference_type, p_reference_id, p_description,
                                              v_owners, v_buckets, v_currencies, v_amounts, p_allow_frozen);
END $$;

-- One balance check per ledger transaction at COMMIT (see the header), by one trigger function
-- on both tables (a helper called from two functions would be a statement of its own per call,
-- costing as much as the check). On ledger_transactions it checks the new transaction; on
-- ledger_entries it returns at once when this commit's check of the entry's transaction already
-- saw the entry.
CREATE OR REPLACE FUNCTION ledger_check_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_tx uuid;
  v_checked text;
  v_slash integer;
  v_entries integer;
  v_unbalanced text;
  v_max_entry bigint;
BEGIN
  IF TG_TABLE_NAME = 'ledger_entries' THEN
    v_tx := NEW.transaction_id;
    v_checked := current_setting('ledger.checked', true);
    v_slash := strpos(coalesce(v_checked, ''), '/');
    IF v_slash > 0 AND left(v_checked, v_slash - 1) = v_tx::text AND NEW.id <= substr(v_checked, v_slash + 1)::bigint THEN
      RETURN NULL;
    END IF;
  ELSE
    v_tx := NEW.id;
  END IF;
  SELECT sum(c)::integer, string_agg(CASE WHEN s <> 0 THEN currency || '=' || s::text END, ', '), max(m)
    INTO v_entries, v_unbalanced, v_max_entry
    FROM (SELECT currency, sum(amount_minor) AS s, count(*) AS c, max(id) AS m FROM ledger_entries
           WHERE transaction_id = v_tx GROUP BY currency) t;
  IF v_unbalanced IS NOT NULL OR coalesce(v_entries, 0) < 2 THEN
    RAISE EXCEPTION USING ERRCODE = 'PL004', MESSAGE = 'LEDGER_UNBALANCED',
      DETAIL = format('transaction %s: sums %s, %s entries', v_tx, coalesce(v_unbalanced, 'zero'), coalesce(v_entries, 0));
  END IF;
  -- Entries up to v_max_entry of this transaction are covered: their own checks can be skipped.
  PERFORM set_config('ledger.checked', v_tx::text || '/' || v_max_entry::text, true);
  RETURN NULL;
END $$;

DROP TRIGGER ledger_transactions_have_entries ON ledger_transactions;
CREATE CONSTRAINT TRIGGER ledger_transactions_have_entries
  AFTER INSERT ON ledger_transactions DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION ledger_check_balanced();
DROP FUNCTION ledger_check_has_entries();
