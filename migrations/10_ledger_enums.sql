-- The posting primitive at less server work per posting, every rule kept. Measured with
-- callgrind on a single-user backend (instructions per posting, deterministic whatever else the
-- machine runs; docs/benchmarks.md, "Ledger"): PostgreSQL reads every CHECK constraint of a table
-- back from its stored form and prepares it again in each statement that writes the table, and
-- runs each foreign key as a query that locks the referenced row, per row inserted.
--
-- * Buckets, currencies and account kinds are enums instead of text with CHECK lists: an enum
--   column refuses an unknown value by its type, with no per-statement work. The labels are
--   declared in code-point order, so ORDER BY, the lock order of snapshot rows and the canonical
--   leg order of postTransaction agree as they did with text. PostgreSQL compares an enum with a
--   parameter or a literal as before, but not with a text expression: SQL that compares these
--   columns with text (a column of another table, a jsonb field) casts explicitly.
-- * The length limits of ledger_transactions are the columns' types (varchar(n), checked by the
--   INSERT's cached plan) instead of four CHECKs; the idempotency key's non-empty rule stays a
--   CHECK. ledger_post_legs checks the lengths first, to refuse with LEDGER_INVALID_POSTING.
-- * ledger_entries has no foreign keys: each one ran a query per entry that locked the account
--   row (FOR KEY SHARE, a WAL record and a dirtied page of ledger_accounts per posting, and a
--   wait behind any account update). The balance check at COMMIT now also refuses an entry whose
--   account or transaction does not exist, and neither can go away later: transactions were
--   append-only already and accounts now cannot be deleted or truncated.
--
-- Operators: the type changes rewrite ledger_entries, ledger_balances, ledger_transactions and
-- reconciliation_items under an exclusive lock, postings wait meanwhile; on a large ledger, apply
-- it in a maintenance window.
--
-- ledger_post_legs keeps its text[] parameters (and so its request hash, which replays of
-- transactions booked by version 3 compare with) and refuses an unknown bucket or currency with
-- LEDGER_INVALID_POSTING, as the CHECKs did with a constraint violation.

CREATE TYPE ledger_bucket AS ENUM ('AVAILABLE', 'HELD', 'PENDING', 'PROMISED');
CREATE TYPE ledger_currency AS ENUM ('BRL', 'EUR', 'USD');
CREATE TYPE ledger_account_kind AS ENUM ('system', 'user');

-- The CHECKs that compare kind with a text literal are dropped and added again (same names, same
-- rules) around the type change.
ALTER TABLE ledger_accounts
  DROP CONSTRAINT ledger_accounts_kind_check,
  DROP CONSTRAINT ledger_accounts_check,
  DROP CONSTRAINT ledger_accounts_check1,
  ALTER COLUMN kind TYPE ledger_account_kind USING kind::ledger_account_kind,
  ADD CONSTRAINT ledger_accounts_check CHECK ((kind = 'system') = (owner_id LIKE 'system:%')),
  ADD CONSTRAINT ledger_accounts_check1 CHECK (kind = 'system' OR owner_id ~ '^[A-Za-z0-9._-]{1,128}$');
ALTER TABLE ledger_balances
  DROP CONSTRAINT ledger_balances_bucket_check,
  DROP CONSTRAINT ledger_balances_currency_check,
  DROP CONSTRAINT ledger_balances_account_kind_check,
  DROP CONSTRAINT ledger_balances_user_non_negative,
  ALTER COLUMN bucket TYPE ledger_bucket USING bucket::ledger_bucket,
  ALTER COLUMN currency TYPE ledger_currency USING currency::ledger_currency,
  ALTER COLUMN account_kind TYPE ledger_account_kind USING account_kind::ledger_account_kind,
  ADD CONSTRAINT ledger_balances_user_non_negative CHECK (account_kind = 'system' OR amount_minor >= 0);
ALTER TABLE ledger_entries
  DROP CONSTRAINT ledger_entries_bucket_check,
  DROP CONSTRAINT ledger_entries_currency_check,
  ALTER COLUMN bucket TYPE ledger_bucket USING bucket::ledger_bucket,
  ALTER COLUMN currency TYPE ledger_currency USING currency::ledger_currency;
ALTER TABLE ledger_transactions
  DROP CONSTRAINT ledger_transactions_description_check,
  DROP CONSTRAINT ledger_transactions_idempotency_key_check,
  DROP CONSTRAINT ledger_transactions_reference_id_check,
  DROP CONSTRAINT ledger_transactions_reference_type_check,
  ALTER COLUMN idempotency_key TYPE varchar(300),
  ALTER COLUMN reference_type TYPE varchar(64),
  ALTER COLUMN reference_id TYPE varchar(200),
  ALTER COLUMN description TYPE varchar(500),
  ADD CONSTRAINT ledger_transactions_idempotency_key_check CHECK (idempotency_key <> '');

ALTER TABLE ledger_entries
  DROP CONSTRAINT ledger_entries_transaction_id_fkey,
  DROP CONSTRAINT ledger_entries_account_id_fkey;
CREATE TRIGGER ledger_accounts_no_delete BEFORE DELETE ON ledger_accounts
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_rewrite();
CREATE TRIGGER ledger_accounts_no_truncate BEFORE TRUNCATE ON ledger_accounts
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_rewrite();

ALTER TABLE reconciliation_items
  DROP CONSTRAINT reconciliation_items_bucket_check,
  DROP CONSTRAINT reconciliation_items_currency_check,
  ALTER COLUMN bucket TYPE ledger_bucket USING bucket::ledger_bucket,
  ALTER COLUMN currency TYPE ledger_currency USING currency::ledger_currency;

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
  v_buckets ledger_bucket[];
  v_currencies ledger_currency[];
  v_account uuid[] := '{}';
  v_kind ledger_account_kind[] := '{}';
  v_id uuid;
  v_acc_kind ledger_account_kind;
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
  IF char_length(p_idempotency_key) NOT BETWEEN 1 AND 300 OR char_length(p_reference_type) > 64
     OR char_length(p_reference_id) > 200 OR char_length(p_description) > 500 THEN
    RAISE EXCEPTION USING ERRCODE = 'PL005', MESSAGE = 'LEDGER_INVALID_POSTING',
      DETAIL = 'idempotency key of 1 to 300 characters, reference type up to 64, reference id up to 200, description up to 500';
  END IF;
  -- The enums' labels (enum_range() reads the catalog on every call: 2% of a posting; a test holds
  -- these lists equal to the types).
  IF NOT (p_buckets <@ '{AVAILABLE,HELD,PENDING,PROMISED}'::text[] AND p_currencies <@ '{BRL,EUR,USD}'::text[]) THEN
    RAISE EXCEPTION USING ERRCODE = 'PL005', MESSAGE = 'LEDGER_INVALID_POSTING',
      DETAIL = format('unknown bucket or currency in %s / %s', p_buckets, p_currencies);
  END IF;
  v_buckets := p_buckets::ledger_bucket[];
  v_currencies := p_currencies::ledger_currency[];

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
  SELECT v_tx, u.a, u.b, u.c, u.m FROM unnest(v_account, v_buckets, v_currencies, p_amounts) AS u(a, b, c, m);

  -- Lock and move snapshot rows in one fixed order (account, bucket, currency), legs on the same
  -- row merged: no deadlocks. At most 16 legs, so an insertion sort of their positions.
  v_order := ARRAY[1];
  FOR i IN 2 .. v_count LOOP
    v_order := v_order || i;
    j := i;
    WHILE j > 1 AND (v_account[v_order[j - 1]], v_buckets[v_order[j - 1]], v_currencies[v_order[j - 1]])
                  > (v_account[v_order[j]], v_buckets[v_order[j]], v_currencies[v_order[j]]) LOOP
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
    WHILE i < v_count AND v_account[v_order[i + 1]] = v_account[k] AND v_buckets[v_order[i + 1]] = v_buckets[k]
          AND v_currencies[v_order[i + 1]] = v_currencies[k] LOOP
      i := i + 1;
      v_delta := v_delta + p_amounts[v_order[i]];
    END LOOP;
    i := i + 1;
    IF v_delta < 0 THEN
      UPDATE ledger_balances b SET amount_minor = b.amount_minor + v_delta, version = b.version + 1, updated_at = now()
       WHERE b.account_id = v_account[k] AND b.bucket = v_buckets[k] AND b.currency = v_currencies[k]
         AND (b.account_kind = 'system' OR b.amount_minor + v_delta >= 0);
      IF NOT FOUND THEN
        IF v_kind[k] = 'system' THEN
          INSERT INTO ledger_balances AS b (account_id, bucket, currency, account_kind, amount_minor, version)
          VALUES (v_account[k], v_buckets[k], v_currencies[k], 'system', v_delta, 1)
          ON CONFLICT (account_id, bucket, currency) DO UPDATE
            SET amount_minor = b.amount_minor + EXCLUDED.amount_minor, version = b.version + 1, updated_at = now();
        ELSE
          RAISE EXCEPTION USING ERRCODE = 'PL001', MESSAGE = 'INSUFFICIENT_FUNDS',
            DETAIL = json_build_object('owner_id', p_owners[k], 'bucket', v_buckets[k], 'currency', v_currencies[k],
                                       'requested_minor', (-v_delta)::text)::text;
        END IF;
      END IF;
    ELSIF v_delta > 0 THEN
      UPDATE ledger_balances b SET amount_minor = b.amount_minor + v_delta, version = b.version + 1, updated_at = now()
       WHERE b.account_id = v_account[k] AND b.bucket = v_buckets[k] AND b.currency = v_currencies[k];
      IF NOT FOUND THEN
        INSERT INTO ledger_balances AS b (account_id, bucket, currency, account_kind, amount_minor, version)
        VALUES (v_account[k], v_buckets[k], v_currencies[k], v_kind[k], v_delta, 1)
        ON CONFLICT (account_id, bucket, currency) DO UPDATE
          SET amount_minor = b.amount_minor + EXCLUDED.amount_minor, version = b.version + 1, updated_at = now();
      END IF;
    END IF;
  END LOOP;

  transaction_id := v_tx;
  created := true;
END $$;

-- As in migration 3, with the world row's bucket typed as the enum.
CREATE OR REPLACE FUNCTION ledger_lock_snapshots(p_account_ids uuid[], p_world_available boolean)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  k record;
  locked integer := 0;
BEGIN
  FOR k IN
    WITH own AS (
      SELECT b.account_id, b.bucket, b.currency FROM ledger_balances b WHERE b.account_id = ANY (p_account_ids)
      UNION
      SELECT DISTINCT e.account_id, e.bucket, e.currency FROM ledger_entries e WHERE e.account_id = ANY (p_account_ids)
    ), world AS (
      SELECT w.id AS account_id, 'AVAILABLE'::ledger_bucket AS bucket, c.currency
        FROM ledger_accounts w, (SELECT DISTINCT currency FROM own) c
       WHERE p_world_available AND w.owner_id = 'system:world'
    ), keys AS (SELECT * FROM own UNION SELECT * FROM world)
    SELECT keys.account_id, keys.bucket, keys.currency, a.kind
      FROM keys JOIN ledger_accounts a ON a.id = keys.account_id
     ORDER BY 1, 2, 3
  LOOP
    INSERT INTO ledger_balances (account_id, bucket, currency, account_kind, amount_minor, version)
    VALUES (k.account_id, k.bucket, k.currency, k.kind, 0, 0)
    ON CONFLICT (account_id, bucket, currency) DO NOTHING;
    PERFORM 1 FROM ledger_balances b
      WHERE b.account_id = k.account_id AND b.bucket = k.bucket AND b.currency = k.currency FOR UPDATE;
    locked := locked + 1;
  END LOOP;
  RETURN locked;
END $$;

-- The balance check at COMMIT (migration 8), which now also stands for the foreign keys of
-- ledger_entries: every entry of the transaction has an existing account, and an entry checked
-- on its own (one added after its transaction's check) belongs to an existing transaction.
CREATE OR REPLACE FUNCTION ledger_check_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_tx uuid;
  v_checked text;
  v_slash integer;
  v_entries integer;
  v_unbalanced text;
  v_max_entry bigint;
  v_orphans integer;
BEGIN
  IF TG_TABLE_NAME = 'ledger_entries' THEN
    v_tx := NEW.transaction_id;
    v_checked := current_setting('ledger.checked', true);
    v_slash := strpos(coalesce(v_checked, ''), '/');
    IF v_slash > 0 AND left(v_checked, v_slash - 1) = v_tx::text AND NEW.id <= substr(v_checked, v_slash + 1)::bigint THEN
      RETURN NULL;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM ledger_transactions t WHERE t.id = v_tx) THEN
      RAISE EXCEPTION USING ERRCODE = 'PL004', MESSAGE = 'LEDGER_UNBALANCED',
        DETAIL = format('entry %s: transaction %s does not exist', NEW.id, v_tx);
    END IF;
  ELSE
    v_tx := NEW.id;
  END IF;
  SELECT sum(c)::integer, string_agg(CASE WHEN s <> 0 THEN currency || '=' || s::text END, ', '), max(m), sum(o)::integer
    INTO v_entries, v_unbalanced, v_max_entry, v_orphans
    FROM (SELECT e.currency, sum(e.amount_minor) AS s, count(*) AS c, max(e.id) AS m,
                 count(*) FILTER (WHERE NOT EXISTS (SELECT FROM ledger_accounts a WHERE a.id = e.account_id)) AS o
            FROM ledger_entries e WHERE e.transaction_id = v_tx GROUP BY e.currency) t;
  IF v_unbalanced IS NOT NULL OR coalesce(v_entries, 0) < 2 THEN
    RAISE EXCEPTION USING ERRCODE = 'PL004', MESSAGE = 'LEDGER_UNBALANCED',
      DETAIL = format('transaction %s: sums %s, %s entries', v_tx, coalesce(v_unbalanced, 'zero'), coalesce(v_entries, 0));
  END IF;
  IF v_orphans > 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'PL004', MESSAGE = 'LEDGER_UNBALANCED',
      DETAIL = format('transaction %s: %s entries of accounts that do not exist', v_tx, v_orphans);
  END IF;
  -- Entries up to v_max_entry of this transaction are covered: their own checks can be skipped.
  PERFORM set_config('ledger.checked', v_tx::text || '/' || v_max_entry::text, true);
  RETURN NULL;
END $$;

-- `ledger verify` and the stats endpoint check what the dropped foreign keys guaranteed too: every
-- entry names an existing account and transaction (migration 2's checks, plus these two).
CREATE OR REPLACE FUNCTION ledger_violations(p_limit integer DEFAULT 100)
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
  UNION ALL
  (SELECT 'entry_without_account', e.id::text, format('account %s does not exist', e.account_id)
     FROM ledger_entries e WHERE NOT EXISTS (SELECT FROM ledger_accounts a WHERE a.id = e.account_id))
  UNION ALL
  (SELECT 'entry_without_transaction', e.id::text, format('transaction %s does not exist', e.transaction_id)
     FROM ledger_entries e WHERE NOT EXISTS (SELECT FROM ledger_transactions t WHERE t.id = e.transaction_id))
  LIMIT p_limit
$$;
