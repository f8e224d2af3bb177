-- Ledger storage, fourth version: movements instead of entries, and credits that take no lock.
-- Measured by counting the backend's instructions per posting (docs/benchmarks.md, "Ledger"):
-- a quarter of a posting was the balance check at COMMIT, and under contention a posting held
-- two snapshot row locks through its commit.
--
-- * ledger_movements: every row moves an amount from one bucket (debit) to another (credit) in
--   one currency, so every row balances by itself: an unbalanced ledger transaction cannot be
--   written at all, by the posting function or by anyone else, and the deferred balance check at
--   COMMIT goes. The entries of DESIGN.md section 3 are the movements' two sides: ledger_entries
--   is now a view with, per transaction, the net change of each bucket (the legs the posting was
--   asked for), so every query that read entries reads them as before.
-- * ledger_balance_credits: a credit (a positive change of a bucket) is appended there instead of
--   updating the bucket's snapshot row, so it locks nothing. A bucket's snapshot is its row in
--   ledger_balances plus its unfolded credits (the view ledger_bucket_balances); both are written
--   in the posting's own transaction. A debit updates the row under its lock and checks the
--   funds; when the row alone is short, the debit first folds the bucket's credits into the row.
--   Credits are also folded by one credit in 32 (its id decides), when the row is not locked by
--   another transaction at that moment (a credit never waits for a row lock), and by the
--   reconciliation tools before they rewrite snapshots, so a bucket has a few dozen unfolded
--   credits on average. No user bucket can go negative: the row's CHECK keeps
--   it at zero or above, and a credit's amount is positive by its type (a domain, checked at no
--   per-statement cost, unlike a CHECK constraint).
-- * Snapshot rows are locked in one order everywhere: owner_id (code points), bucket, currency;
--   callers already sort their legs so. A two-leg posting (every event of the money model but a
--   charge paid or a fee) locks at most one row, and only for a debit.
-- * ledger_post_legs keeps its signature, its request hash (replays of earlier transactions still
--   match) and its refusals: PL001 INSUFFICIENT_FUNDS, PL002 ACCOUNT_FROZEN, PL003
--   IDEMPOTENCY_KEY_REUSED, PL004 LEDGER_UNBALANCED (now raised before anything is written),
--   PL005 LEDGER_INVALID_POSTING.
-- * Existing entries become movements: per transaction and currency, the debits and the credits
--   in entry order are paired greedily. The migration checks that every transaction and every
--   bucket has the same sums as before, then drops the entries table.
-- * Given up with the check at COMMIT: the refusal of a movement whose account or transaction does
--   not exist (the foreign keys' rule since migration 10) and of a transaction without movements.
--   Neither can change a balance, only the posting function writes these rows, and `ledger verify`
--   reports both.
--
-- Operators: the conversion reads every entry and rewrites the ledger under an exclusive lock; on
-- a large ledger, apply it in a maintenance window (`npm run migrate`) before starting the new
-- version.

LOCK TABLE ledger_transactions, ledger_entries, ledger_balances, ledger_accounts IN ACCESS EXCLUSIVE MODE;

CREATE TABLE ledger_movements (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  transaction_id uuid NOT NULL,
  currency       ledger_currency NOT NULL,
  amount_minor   bigint NOT NULL,
  debit_account  uuid NOT NULL,
  debit_bucket   ledger_bucket NOT NULL,
  credit_account uuid NOT NULL,
  credit_bucket  ledger_bucket NOT NULL
);
CREATE INDEX ledger_movements_transaction ON ledger_movements (transaction_id);
CREATE INDEX ledger_movements_debit ON ledger_movements (debit_account, id DESC);
CREATE INDEX ledger_movements_credit ON ledger_movements (credit_account, id DESC);
CREATE TRIGGER ledger_movements_append_only BEFORE UPDATE OR DELETE ON ledger_movements
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_rewrite();
CREATE TRIGGER ledger_movements_no_truncate BEFORE TRUNCATE ON ledger_movements
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_rewrite();

CREATE DOMAIN ledger_positive_minor AS bigint CHECK (VALUE > 0);

CREATE TABLE ledger_balance_credits (
  id           bigint GENERATED ALWAYS AS IDENTITY,
  account_id   uuid NOT NULL,
  bucket       ledger_bucket NOT NULL,
  currency     ledger_currency NOT NULL,
  amount_minor ledger_positive_minor NOT NULL
);
CREATE INDEX ledger_balance_credits_bucket ON ledger_balance_credits (account_id, bucket, currency);
-- Folding deletes credits (into their row, in the same transaction); nothing rewrites one.
CREATE TRIGGER ledger_balance_credits_no_update BEFORE UPDATE ON ledger_balance_credits
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_rewrite();
CREATE TRIGGER ledger_balance_credits_no_truncate BEFORE TRUNCATE ON ledger_balance_credits
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_rewrite();

-- The conversion. Two-entry transactions (nearly all) in one statement; the rest one by one.
INSERT INTO ledger_movements (transaction_id, currency, amount_minor, debit_account, debit_bucket, credit_account, credit_bucket)
SELECT d.transaction_id, d.currency, c.amount_minor, d.account_id, d.bucket, c.account_id, c.bucket
  FROM ledger_entries d
  JOIN ledger_entries c ON c.transaction_id = d.transaction_id AND c.id <> d.id
 WHERE d.amount_minor < 0 AND c.amount_minor = -d.amount_minor AND c.currency = d.currency
   AND (SELECT count(*) FROM ledger_entries e WHERE e.transaction_id = d.transaction_id) = 2
 ORDER BY d.transaction_id, d.id;

DO $$
DECLARE
  v_tx uuid;
  v_cur ledger_currency;
  d record;
  c record;
  v_debits bigint[];
  v_credits bigint[];
  v_debit_left bigint;
  v_credit_left bigint;
  v_move bigint;
  i integer;
  j integer;
BEGIN
  FOR v_tx, v_cur IN
    SELECT DISTINCT e.transaction_id, e.currency FROM ledger_entries e
     WHERE NOT EXISTS (SELECT FROM ledger_movements m WHERE m.transaction_id = e.transaction_id)
     ORDER BY 1, 2
  LOOP
    SELECT array_agg(e.id ORDER BY e.id) FILTER (WHERE e.amount_minor < 0),
           array_agg(e.id ORDER BY e.id) FILTER (WHERE e.amount_minor > 0)
      INTO v_debits, v_credits
      FROM ledger_entries e WHERE e.transaction_id = v_tx AND e.currency = v_cur;
    i := 1;
    j := 1;
    v_debit_left := NULL;
    v_credit_left := NULL;
    WHILE i <= coalesce(cardinality(v_debits), 0) AND j <= coalesce(cardinality(v_credits), 0) LOOP
      SELECT * INTO d FROM ledger_entries WHERE id = v_debits[i];
      SELECT * INTO c FROM ledger_entries WHERE id = v_credits[j];
      v_debit_left := coalesce(v_debit_left, -d.amount_minor);
      v_credit_left := coalesce(v_credit_left, c.amount_minor);
      v_move := least(v_debit_left, v_credit_left);
      INSERT INTO ledger_movements (transaction_id, currency, amount_minor, debit_account, debit_bucket, credit_account, credit_bucket)
      VALUES (v_tx, v_cur, v_move, d.account_id, d.bucket, c.account_id, c.bucket);
      v_debit_left := v_debit_left - v_move;
      v_credit_left := v_credit_left - v_move;
      IF v_debit_left = 0 THEN i := i + 1; v_debit_left := NULL; END IF;
      IF v_credit_left = 0 THEN j := j + 1; v_credit_left := NULL; END IF;
    END LOOP;
    IF i <= coalesce(cardinality(v_debits), 0) OR j <= coalesce(cardinality(v_credits), 0) THEN
      RAISE EXCEPTION 'migration 12: transaction % does not balance in %', v_tx, v_cur;
    END IF;
  END LOOP;
END $$;

-- Nothing may differ: every transaction and every bucket has the sums its entries had.
DO $$
DECLARE
  v_diff text;
BEGIN
  WITH moved AS (
    SELECT transaction_id, debit_account AS account_id, debit_bucket AS bucket, currency, -amount_minor AS amount_minor FROM ledger_movements
    UNION ALL
    SELECT transaction_id, credit_account, credit_bucket, currency, amount_minor FROM ledger_movements
  ), a AS (
    SELECT transaction_id, account_id, bucket, currency, sum(amount_minor) AS total FROM ledger_entries GROUP BY 1, 2, 3, 4
  ), b AS (
    SELECT transaction_id, account_id, bucket, currency, sum(amount_minor) AS total FROM moved GROUP BY 1, 2, 3, 4
  )
  SELECT format('%s %s %s %s: entries %s, movements %s', transaction_id, account_id, bucket, currency, a.total, b.total)
    INTO v_diff
    FROM a FULL JOIN b USING (transaction_id, account_id, bucket, currency)
   WHERE coalesce(a.total, 0) <> coalesce(b.total, 0)
   LIMIT 1;
  IF v_diff IS NOT NULL THEN
    RAISE EXCEPTION 'migration 12: the movements differ from the entries: %', v_diff;
  END IF;
END $$;

DROP FUNCTION ledger_lock_snapshots(uuid[], boolean);
DROP FUNCTION ledger_violations(integer);
DROP TABLE ledger_entries;
DROP TRIGGER ledger_transactions_have_entries ON ledger_transactions;
DROP FUNCTION ledger_check_balanced();

-- The entries of a transaction: the net change it made to each bucket (the movements' two sides,
-- a bucket debited by two movements of one transaction shows once, with the sum).
CREATE VIEW ledger_entries (id, transaction_id, account_id, bucket, currency, amount_minor) AS
  SELECT min(s.id), s.transaction_id, s.account_id, s.bucket, s.currency, sum(s.amount_minor)::bigint
    FROM (SELECT m.id * 2 AS id, m.transaction_id, m.debit_account AS account_id, m.debit_bucket AS bucket, m.currency,
                 -m.amount_minor AS amount_minor
            FROM ledger_movements m
          UNION ALL
          SELECT m.id * 2 + 1, m.transaction_id, m.credit_account, m.credit_bucket, m.currency, m.amount_minor
            FROM ledger_movements m) s
   GROUP BY s.transaction_id, s.account_id, s.bucket, s.currency;
COMMENT ON VIEW ledger_entries IS 'The entries of DESIGN.md section 3: per transaction, the net change of each bucket, from its movements (migration 12).';

-- What every reader of balances reads: a bucket's row plus its unfolded credits.
CREATE VIEW ledger_bucket_balances (account_id, bucket, currency, account_kind, amount_minor, unfolded_minor) AS
  SELECT s.account_id, s.bucket, s.currency, a.kind, sum(s.amount_minor)::bigint, sum(s.unfolded_minor)::bigint
    FROM (SELECT b.account_id, b.bucket, b.currency, b.amount_minor, 0::bigint AS unfolded_minor FROM ledger_balances b
          UNION ALL
          SELECT c.account_id, c.bucket, c.currency, c.amount_minor, c.amount_minor FROM ledger_balance_credits c) s
    JOIN ledger_accounts a ON a.id = s.account_id
   GROUP BY s.account_id, s.bucket, s.currency, a.kind;
COMMENT ON VIEW ledger_bucket_balances IS 'Balance of each bucket: its snapshot row plus its unfolded credits (migration 12).';

-- The account of an owner: a user account is created on first use, a system account must exist.
CREATE FUNCTION ledger_account(p_owner text, OUT id uuid, OUT kind ledger_account_kind, OUT status text)
LANGUAGE plpgsql AS $$
BEGIN
  SELECT a.id, a.kind, a.status INTO id, kind, status FROM ledger_accounts a WHERE a.owner_id = p_owner;
  IF NOT FOUND THEN
    IF p_owner LIKE 'system:%' THEN
      RAISE EXCEPTION USING ERRCODE = 'PL005', MESSAGE = 'LEDGER_INVALID_POSTING', DETAIL = 'unknown system account ' || p_owner;
    END IF;
    INSERT INTO ledger_accounts (owner_id, kind) VALUES (p_owner, 'user') ON CONFLICT (owner_id) DO NOTHING;
    SELECT a.id, a.kind, a.status INTO STRICT id, kind, status FROM ledger_accounts a WHERE a.owner_id = p_owner;
  END IF;
END $$;

-- Folds a bucket's unfolded credits into its snapshot row, under the row's lock (the row is
-- created at zero when missing), and returns the row's amount afterwards; callers take row locks in
-- lock order. p_wait false is the opportunistic fold of a credit: when another transaction holds
-- the row, nothing is folded this time and NULL comes back, so a credit never waits for a lock
-- (only a bucket's very first row, inserted by two transactions at once, makes one wait for the
-- other).
CREATE FUNCTION ledger_fold_credits(p_account uuid, p_kind ledger_account_kind, p_bucket ledger_bucket, p_currency ledger_currency,
                                    p_wait boolean DEFAULT true)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_amount bigint;
  v_credits bigint;
BEGIN
  IF p_wait THEN
    SELECT b.amount_minor INTO v_amount FROM ledger_balances b
     WHERE b.account_id = p_account AND b.bucket = p_bucket AND b.currency = p_currency FOR UPDATE;
  ELSE
    SELECT b.amount_minor INTO v_amount FROM ledger_balances b
     WHERE b.account_id = p_account AND b.bucket = p_bucket AND b.currency = p_currency FOR UPDATE SKIP LOCKED;
    IF NOT FOUND AND EXISTS (SELECT FROM ledger_balances b WHERE b.account_id = p_account AND b.bucket = p_bucket AND b.currency = p_currency) THEN
      RETURN NULL;
    END IF;
  END IF;
  IF v_amount IS NULL THEN
    INSERT INTO ledger_balances (account_id, bucket, currency, account_kind, amount_minor, version)
    VALUES (p_account, p_bucket, p_currency, p_kind, 0, 0)
    ON CONFLICT (account_id, bucket, currency) DO NOTHING;
    SELECT b.amount_minor INTO STRICT v_amount FROM ledger_balances b
     WHERE b.account_id = p_account AND b.bucket = p_bucket AND b.currency = p_currency FOR UPDATE;
  END IF;
  -- This statement starts after the lock was granted: it sees every credit committed before, and
  -- any other fold of this bucket has committed (a fold holds the row lock).
  WITH folded AS (
    DELETE FROM ledger_balance_credits c
     WHERE c.account_id = p_account AND c.bucket = p_bucket AND c.currency = p_currency
    RETURNING c.amount_minor
  ) SELECT sum(f.amount_minor)::bigint INTO v_credits FROM folded f;
  IF v_credits IS NOT NULL THEN
    UPDATE ledger_balances b SET amount_minor = b.amount_minor + v_credits, version = b.version + 1, updated_at = now()
     WHERE b.account_id = p_account AND b.bucket = p_bucket AND b.currency = p_currency
    RETURNING b.amount_minor INTO v_amount;
  END IF;
  RETURN v_amount;
END $$;

-- A debit the one-statement path could not book: refuses a frozen account's AVAILABLE, folds the
-- bucket's credits under the row lock, checks the funds of a user bucket and books.
CREATE FUNCTION ledger_debit(
  p_owner text, p_account uuid, p_kind ledger_account_kind, p_status text,
  p_bucket ledger_bucket, p_currency ledger_currency, p_amount bigint, p_allow_frozen boolean
) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_amount bigint;
BEGIN
  -- A frozen account can receive but not spend: nothing may leave its AVAILABLE bucket.
  IF p_status = 'FROZEN' AND p_kind = 'user' AND p_bucket = 'AVAILABLE' AND NOT p_allow_frozen THEN
    RAISE EXCEPTION USING ERRCODE = 'PL002', MESSAGE = 'ACCOUNT_FROZEN', DETAIL = p_owner;
  END IF;
  v_amount := ledger_fold_credits(p_account, p_kind, p_bucket, p_currency);
  IF p_kind = 'user' AND v_amount < p_amount THEN
    RAISE EXCEPTION USING ERRCODE = 'PL001', MESSAGE = 'INSUFFICIENT_FUNDS',
      DETAIL = json_build_object('owner_id', p_owner, 'bucket', p_bucket, 'currency', p_currency, 'requested_minor', p_amount::text)::text;
  END IF;
  UPDATE ledger_balances b SET amount_minor = b.amount_minor - p_amount, version = b.version + 1, updated_at = now()
   WHERE b.account_id = p_account AND b.bucket = p_bucket AND b.currency = p_currency;
END $$;

-- One bucket's net change inside a posting, at its place in lock order: a credit is appended (and
-- folded when its id says so), a debit updates the row in one statement when the row holds the
-- funds and nothing frozen is in the way, and goes through ledger_debit otherwise.
CREATE FUNCTION ledger_move_bucket(
  p_owner text, p_account uuid, p_kind ledger_account_kind, p_status text,
  p_bucket ledger_bucket, p_currency ledger_currency, p_delta bigint, p_allow_frozen boolean
) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_credit bigint;
BEGIN
  IF p_delta > 0 THEN
    INSERT INTO ledger_balance_credits (account_id, bucket, currency, amount_minor)
    VALUES (p_account, p_bucket, p_currency, p_delta) RETURNING id INTO v_credit;
    IF v_credit % 32 = 0 THEN
      PERFORM ledger_fold_credits(p_account, p_kind, p_bucket, p_currency, false);
    END IF;
  ELSIF p_delta < 0 THEN
    UPDATE ledger_balances b SET amount_minor = b.amount_minor + p_delta, version = b.version + 1, updated_at = now()
     WHERE b.account_id = p_account AND b.bucket = p_bucket AND b.currency = p_currency
       AND (b.account_kind = 'system' OR (b.amount_minor + p_delta >= 0 AND (p_status = 'ACTIVE' OR p_allow_frozen OR p_bucket <> 'AVAILABLE')));
    IF NOT FOUND THEN
      PERFORM ledger_debit(p_owner, p_account, p_kind, p_status, p_bucket, p_currency, -p_delta, p_allow_frozen);
    END IF;
  END IF;
END $$;

-- A posting of more than two legs, or two legs the fast path does not take (both on one bucket,
-- or unbalanced): checks the balance per currency, books the legs' net change per bucket in lock
-- order, and writes the movements that pair the debits with the credits, per currency, in leg
-- order, greedily.
CREATE FUNCTION ledger_post_general(
  p_tx uuid, p_owners text[], p_buckets ledger_bucket[], p_currencies ledger_currency[], p_amounts bigint[], p_allow_frozen boolean
) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_n integer := cardinality(p_owners);
  v_unbalanced text;
  v_order integer[];
  v_account uuid[];
  v_kind ledger_account_kind;
  v_status text;
  v_id uuid;
  v_delta bigint;
  v_debit_left bigint;
  v_credit_left bigint;
  v_move bigint;
  v_cur ledger_currency;
  i integer;
  j integer;
  k integer;
BEGIN
  SELECT string_agg(t.c || '=' || t.s, ', ') INTO v_unbalanced
    FROM (SELECT u.c, sum(u.m) AS s FROM unnest(p_currencies, p_amounts) AS u(c, m) GROUP BY u.c HAVING sum(u.m) <> 0) t;
  IF v_unbalanced IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PL004', MESSAGE = 'LEDGER_UNBALANCED', DETAIL = 'the legs sum to ' || v_unbalanced;
  END IF;
  -- The legs in lock order; legs of one bucket are adjacent.
  SELECT array_agg(u.n ORDER BY u.o COLLATE "C", u.b, u.c, u.n) INTO v_order
    FROM unnest(p_owners, p_buckets, p_currencies) WITH ORDINALITY AS u(o, b, c, n);
  v_account := array_fill(NULL::uuid, ARRAY[v_n]);
  i := 1;
  WHILE i <= v_n LOOP
    k := v_order[i];
    SELECT a.id, a.kind, a.status INTO v_id, v_kind, v_status FROM ledger_account(p_owners[k]) a;
    -- A frozen account's AVAILABLE gives nothing, whatever else the posting puts back there.
    v_delta := 0;
    j := i;
    LOOP
      IF v_status = 'FROZEN' AND v_kind = 'user' AND p_buckets[v_order[j]] = 'AVAILABLE' AND p_amounts[v_order[j]] < 0 AND NOT p_allow_frozen THEN
        RAISE EXCEPTION USING ERRCODE = 'PL002', MESSAGE = 'ACCOUNT_FROZEN', DETAIL = p_owners[k];
      END IF;
      v_account[v_order[j]] := v_id;
      EXIT WHEN j = v_n OR p_owners[v_order[j + 1]] <> p_owners[k];
      j := j + 1;
    END LOOP;
    -- The owner's buckets, each with its net change.
    WHILE i <= j LOOP
      k := v_order[i];
      v_delta := p_amounts[k];
      WHILE i < j AND p_buckets[v_order[i + 1]] = p_buckets[k] AND p_currencies[v_order[i + 1]] = p_currencies[k] LOOP
        i := i + 1;
        v_delta := v_delta + p_amounts[v_order[i]];
      END LOOP;
      PERFORM ledger_move_bucket(p_owners[k], v_id, v_kind, v_status, p_buckets[k], p_currencies[k], v_delta, p_allow_frozen);
      i := i + 1;
    END LOOP;
  END LOOP;
  -- Movements: per currency, the debit legs in leg order, each paired with credit legs until spent.
  FOR v_cur IN SELECT DISTINCT u.c FROM unnest(p_currencies) AS u(c) ORDER BY 1 LOOP
    i := 1;
    j := 1;
    v_debit_left := NULL;
    v_credit_left := NULL;
    LOOP
      WHILE i <= v_n AND NOT (p_currencies[i] = v_cur AND p_amounts[i] < 0) LOOP i := i + 1; END LOOP;
      WHILE j <= v_n AND NOT (p_currencies[j] = v_cur AND p_amounts[j] > 0) LOOP j := j + 1; END LOOP;
      EXIT WHEN i > v_n OR j > v_n;
      v_debit_left := coalesce(v_debit_left, -p_amounts[i]);
      v_credit_left := coalesce(v_credit_left, p_amounts[j]);
      v_move := least(v_debit_left, v_credit_left);
      INSERT INTO ledger_movements (transaction_id, currency, amount_minor, debit_account, debit_bucket, credit_account, credit_bucket)
      VALUES (p_tx, v_cur, v_move, v_account[i], p_buckets[i], v_account[j], p_buckets[j]);
      v_debit_left := v_debit_left - v_move;
      v_credit_left := v_credit_left - v_move;
      IF v_debit_left = 0 THEN i := i + 1; v_debit_left := NULL; END IF;
      IF v_credit_left = 0 THEN j := j + 1; v_credit_left := NULL; END IF;
    END LOOP;
  END LOOP;
END $$;

-- The one posting primitive (signature, request hash and refusals as in migration 10).
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
  v_n integer := cardinality(p_owners);
  v_tx uuid;
  v_existing text;
  v_entries jsonb;
  v_hash text;
  v_debit integer;
  v_credit integer;
  v_cur ledger_currency;
  v_amount bigint;
  v_debit_bucket ledger_bucket;
  v_credit_bucket ledger_bucket;
  v_debit_account uuid;
  v_debit_kind ledger_account_kind;
  v_debit_status text;
  v_credit_account uuid;
  v_credit_kind ledger_account_kind;
  v_credit_status text;
  v_credit_id bigint;
  v_fold boolean;
  v_credit_first boolean;
BEGIN
  -- Every rule on the input in one expression; a refusal says which one failed.
  IF (v_n BETWEEN 2 AND 16 AND cardinality(p_buckets) = v_n AND cardinality(p_currencies) = v_n AND cardinality(p_amounts) = v_n
      AND array_position(p_amounts, 0) IS NULL AND array_position(p_amounts, NULL) IS NULL AND array_position(p_owners, NULL) IS NULL
      AND char_length(p_idempotency_key) BETWEEN 1 AND 300 AND coalesce(char_length(p_reference_type), 0) <= 64
      AND coalesce(char_length(p_reference_id), 0) <= 200 AND coalesce(char_length(p_description), 0) <= 500
      AND p_buckets <@ '{AVAILABLE,HELD,PENDING,PROMISED}'::text[] AND p_currencies <@ '{BRL,EUR,USD}'::text[]) IS NOT TRUE THEN
    RAISE EXCEPTION USING ERRCODE = 'PL005', MESSAGE = 'LEDGER_INVALID_POSTING', DETAIL = CASE
      WHEN v_n IS NULL OR v_n NOT BETWEEN 2 AND 16 OR cardinality(p_buckets) IS DISTINCT FROM v_n
           OR cardinality(p_currencies) IS DISTINCT FROM v_n OR cardinality(p_amounts) IS DISTINCT FROM v_n
        THEN 'between 2 and 16 entries, each with owner, bucket, currency and amount'
      WHEN array_position(p_amounts, 0) IS NOT NULL OR array_position(p_amounts, NULL) IS NOT NULL OR array_position(p_owners, NULL) IS NOT NULL
        THEN 'an entry of zero or without owner'
      WHEN p_buckets <@ '{AVAILABLE,HELD,PENDING,PROMISED}'::text[] AND p_currencies <@ '{BRL,EUR,USD}'::text[]
        THEN 'idempotency key of 1 to 300 characters, reference type up to 64, reference id up to 200, description up to 500'
      ELSE format('unknown bucket or currency in %s / %s', p_buckets, p_currencies) END;
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

  IF v_n = 2 AND p_currencies[1] = p_currencies[2] AND p_amounts[1] = -p_amounts[2]
     AND (p_owners[1], p_buckets[1]) IS DISTINCT FROM (p_owners[2], p_buckets[2]) THEN
    -- One amount from one bucket to another: the movement, the credit appended, and the debit's
    -- row updated last (its lock lasts until COMMIT). A credit whose id says fold takes its row's
    -- lock too, before or after the debit's as lock order says.
    v_debit := CASE WHEN p_amounts[1] < 0 THEN 1 ELSE 2 END;
    v_credit := 3 - v_debit;
    v_cur := p_currencies[1];
    v_amount := p_amounts[v_credit];
    v_debit_bucket := p_buckets[v_debit];
    v_credit_bucket := p_buckets[v_credit];
    SELECT a.id, a.kind, a.status INTO v_debit_account, v_debit_kind, v_debit_status FROM ledger_accounts a WHERE a.owner_id = p_owners[v_debit];
    IF NOT FOUND THEN
      SELECT a.id, a.kind, a.status INTO v_debit_account, v_debit_kind, v_debit_status FROM ledger_account(p_owners[v_debit]) a;
    END IF;
    SELECT a.id, a.kind, a.status INTO v_credit_account, v_credit_kind, v_credit_status FROM ledger_accounts a WHERE a.owner_id = p_owners[v_credit];
    IF NOT FOUND THEN
      SELECT a.id, a.kind, a.status INTO v_credit_account, v_credit_kind, v_credit_status FROM ledger_account(p_owners[v_credit]) a;
    END IF;
    INSERT INTO ledger_movements (transaction_id, currency, amount_minor, debit_account, debit_bucket, credit_account, credit_bucket)
    VALUES (v_tx, v_cur, v_amount, v_debit_account, v_debit_bucket, v_credit_account, v_credit_bucket);
    INSERT INTO ledger_balance_credits (account_id, bucket, currency, amount_minor)
    VALUES (v_credit_account, v_credit_bucket, v_cur, v_amount) RETURNING id INTO v_credit_id;
    v_fold := v_credit_id % 32 = 0;
    IF v_fold THEN
      v_credit_first := (p_owners[v_credit] COLLATE "C", p_buckets[v_credit] COLLATE "C") < (p_owners[v_debit] COLLATE "C", p_buckets[v_debit] COLLATE "C");
      IF v_credit_first THEN
        PERFORM ledger_fold_credits(v_credit_account, v_credit_kind, v_credit_bucket, v_cur, false);
      END IF;
    END IF;
    UPDATE ledger_balances b SET amount_minor = b.amount_minor - v_amount, version = b.version + 1, updated_at = now()
     WHERE b.account_id = v_debit_account AND b.bucket = v_debit_bucket AND b.currency = v_cur
       AND (b.account_kind = 'system'
            OR (b.amount_minor >= v_amount AND (v_debit_status = 'ACTIVE' OR p_allow_frozen OR v_debit_bucket <> 'AVAILABLE')));
    IF NOT FOUND THEN
      PERFORM ledger_debit(p_owners[v_debit], v_debit_account, v_debit_kind, v_debit_status, v_debit_bucket, v_cur, v_amount, p_allow_frozen);
    END IF;
    IF v_fold AND NOT v_credit_first THEN
      PERFORM ledger_fold_credits(v_credit_account, v_credit_kind, v_credit_bucket, v_cur, false);
    END IF;
  ELSE
    PERFORM ledger_post_general(v_tx, p_owners, p_buckets::ledger_bucket[], p_currencies::ledger_currency[], p_amounts, p_allow_frozen);
  END IF;

  transaction_id := v_tx;
  created := true;
END $$;

-- Locks the snapshot rows of the given accounts in lock order (owner, bucket, currency), creating
-- a zero row for a bucket that has entries or credits but no row, and folds their credits, so that
-- a recomputation and a concurrent debit queue behind each other and never deadlock. A credit
-- takes no lock: what the caller compares must read rows and credits in one statement (the view
-- ledger_bucket_balances). p_world_available also locks system:world's AVAILABLE rows in every
-- currency the accounts use (the other leg of a compensating posting). Runs inside the caller's
-- transaction; the locks last until it ends.
CREATE FUNCTION ledger_lock_snapshots(p_account_ids uuid[], p_world_available boolean)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  k record;
  locked integer := 0;
BEGIN
  FOR k IN
    WITH own AS (
      SELECT b.account_id, b.bucket, b.currency FROM ledger_balances b WHERE b.account_id = ANY (p_account_ids)
      UNION
      SELECT c.account_id, c.bucket, c.currency FROM ledger_balance_credits c WHERE c.account_id = ANY (p_account_ids)
      UNION
      SELECT e.account_id, e.bucket, e.currency FROM ledger_entries e WHERE e.account_id = ANY (p_account_ids)
    ), world AS (
      SELECT w.id AS account_id, 'AVAILABLE'::ledger_bucket AS bucket, c.currency
        FROM ledger_accounts w, (SELECT DISTINCT currency FROM own) c
       WHERE p_world_available AND w.owner_id = 'system:world'
    ), keys AS (SELECT * FROM own UNION SELECT * FROM world)
    SELECT keys.account_id, keys.bucket, keys.currency, a.kind
      FROM keys JOIN ledger_accounts a ON a.id = keys.account_id
     ORDER BY a.owner_id COLLATE "C", keys.bucket, keys.currency
  LOOP
    PERFORM ledger_fold_credits(k.account_id, k.kind, k.bucket, k.currency);
    locked := locked + 1;
  END LOOP;
  RETURN locked;
END $$;

-- `ledger verify` and the stats endpoint: every invariant over the whole ledger. With movements a
-- transaction cannot be unbalanced; the check stays, over the entries view, as a check of the
-- view and of anything written around the posting function.
CREATE FUNCTION ledger_violations(p_limit integer DEFAULT 100)
RETURNS TABLE (kind text, subject text, detail text) LANGUAGE sql STABLE AS $$
  (SELECT 'unbalanced_transaction', t.id::text, string_agg(s.currency || '=' || s.total::text, ', ')
     FROM ledger_transactions t
     JOIN (SELECT transaction_id, currency, sum(amount_minor) AS total FROM ledger_entries
            GROUP BY transaction_id, currency HAVING sum(amount_minor) <> 0) s ON s.transaction_id = t.id
    GROUP BY t.id)
  UNION ALL
  (SELECT 'transaction_without_entries', t.id::text, 'no movement'
     FROM ledger_transactions t
    WHERE NOT EXISTS (SELECT FROM ledger_movements m WHERE m.transaction_id = t.id))
  UNION ALL
  (SELECT 'snapshot_mismatch', a.owner_id || '/' || coalesce(b.bucket, e.bucket) || '/' || coalesce(b.currency, e.currency),
          format('snapshot %s, entries %s', coalesce(b.amount_minor, 0), coalesce(e.total, 0))
            || CASE WHEN coalesce(b.unfolded_minor, 0) <> 0 THEN format(' (of the snapshot, %s in unfolded credits)', b.unfolded_minor) ELSE '' END
     FROM (SELECT account_id, bucket, currency, sum(amount_minor) AS total FROM ledger_entries
            GROUP BY account_id, bucket, currency) e
     FULL JOIN ledger_bucket_balances b USING (account_id, bucket, currency)
     JOIN ledger_accounts a ON a.id = coalesce(b.account_id, e.account_id)
    WHERE coalesce(b.amount_minor, 0) <> coalesce(e.total, 0))
  UNION ALL
  (SELECT 'negative_user_bucket', a.owner_id || '/' || b.bucket || '/' || b.currency, b.amount_minor::text
     FROM ledger_balances b JOIN ledger_accounts a ON a.id = b.account_id
    WHERE a.kind = 'user' AND b.amount_minor < 0)
  UNION ALL
  (SELECT 'entry_without_account', m.id::text, format('movement %s: account %s does not exist', m.id, x.account_id)
     FROM ledger_movements m CROSS JOIN LATERAL (VALUES (m.debit_account), (m.credit_account)) AS x(account_id)
    WHERE NOT EXISTS (SELECT FROM ledger_accounts a WHERE a.id = x.account_id))
  UNION ALL
  (SELECT 'entry_without_transaction', m.id::text, format('movement %s: transaction %s does not exist', m.id, m.transaction_id)
     FROM ledger_movements m WHERE NOT EXISTS (SELECT FROM ledger_transactions t WHERE t.id = m.transaction_id))
  UNION ALL
  (SELECT 'credit_without_account', c.id::text, format('unfolded credit %s: account %s does not exist', c.id, c.account_id)
     FROM ledger_balance_credits c WHERE NOT EXISTS (SELECT FROM ledger_accounts a WHERE a.id = c.account_id))
  LIMIT p_limit
$$;
