-- Reconciliation runs (DESIGN.md section 3; the interface spec's /admin/reconcile/* tools).
-- Every run of a reconcile tool, dry or real, leaves one row in reconciliation_runs and one row
-- per item it found in reconciliation_items. A real run changes the ledger only through
-- ordinary ledger transactions (ledger_post, idempotency key reconcile:<run_id>:<item key>);
-- balance snapshots are a cache and are rewritten in place, so every snapshot correction is
-- recorded here with its value before and after. docs/reconciliation.md describes the tools.

CREATE TABLE reconciliation_runs (
  id            uuid PRIMARY KEY,
  tool          text NOT NULL CHECK (tool ~ '^[a-z][a-z0-9-]{0,63}$'),
  -- What the run covers: the tool, or tool:owner_id for a one-owner tool. At most one real run
  -- per scope is RUNNING at a time (index below); dry runs change nothing and may overlap.
  scope         text NOT NULL CHECK (char_length(scope) BETWEEN 1 AND 200),
  dry_run       boolean NOT NULL,
  status        text NOT NULL CHECK (status IN ('RUNNING', 'COMPLETED', 'FAILED')),
  requested_by  text NOT NULL CHECK (char_length(requested_by) BETWEEN 1 AND 200),
  params        jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- Real runs only: the Temporal workflow (reconcile-<tool>-<run_id>) that does the work.
  workflow_id   text CHECK (char_length(workflow_id) <= 300),
  started_at    timestamptz NOT NULL DEFAULT now(),
  finished_at   timestamptz,
  -- Counts are written when the run ends, from reconciliation_items (exact under retries).
  scanned       bigint NOT NULL DEFAULT 0 CHECK (scanned >= 0),
  -- false when a dry run stopped at its time or item bound before it had looked at everything.
  complete      boolean NOT NULL DEFAULT true,
  batches       integer NOT NULL DEFAULT 0 CHECK (batches >= 0),
  items_found   integer NOT NULL DEFAULT 0 CHECK (items_found >= 0),
  items_planned integer NOT NULL DEFAULT 0 CHECK (items_planned >= 0),
  items_fixed   integer NOT NULL DEFAULT 0 CHECK (items_fixed >= 0),
  items_skipped integer NOT NULL DEFAULT 0 CHECK (items_skipped >= 0),
  items_failed  integer NOT NULL DEFAULT 0 CHECK (items_failed >= 0),
  error         text CHECK (char_length(error) <= 2000),
  -- The bounded report the API answers with (counts and the first items).
  report        jsonb,
  CHECK ((status = 'RUNNING') = (finished_at IS NULL)),
  CHECK (dry_run OR status <> 'COMPLETED' OR workflow_id IS NOT NULL)
);
CREATE INDEX reconciliation_runs_tool ON reconciliation_runs (tool, started_at DESC);
CREATE UNIQUE INDEX reconciliation_runs_one_running ON reconciliation_runs (scope)
  WHERE status = 'RUNNING' AND NOT dry_run;

CREATE TABLE reconciliation_items (
  run_id                   uuid NOT NULL REFERENCES reconciliation_runs (id),
  -- Stable within the run: owner_id/bucket/currency, or reversal/<transaction id>. A retried
  -- batch records an item once (primary key).
  item_key                 text NOT NULL CHECK (char_length(item_key) BETWEEN 1 AND 300),
  seq                      bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  action                   text NOT NULL CHECK (action IN ('SNAPSHOT_CORRECTION', 'COMPENSATING_POSTING')),
  -- PLANNED: a dry run's "would change"; FIXED: changed; SKIPPED: found but left alone (detail
  -- says why); FAILED: the fix was refused (detail has the code).
  status                   text NOT NULL CHECK (status IN ('PLANNED', 'FIXED', 'SKIPPED', 'FAILED')),
  owner_id                 text NOT NULL CHECK (char_length(owner_id) BETWEEN 1 AND 200),
  bucket                   text NOT NULL CHECK (bucket IN ('AVAILABLE', 'HELD', 'PENDING', 'PROMISED')),
  currency                 text NOT NULL CHECK (currency IN ('BRL', 'USD', 'EUR')),
  snapshot_minor           bigint NOT NULL,
  computed_minor           bigint NOT NULL,
  amount_minor             bigint CHECK (amount_minor > 0),
  snapshot_after_minor     bigint,
  transaction_id           uuid REFERENCES ledger_transactions (id),
  reference_transaction_id uuid REFERENCES ledger_transactions (id),
  entries                  jsonb,
  detail                   text CHECK (char_length(detail) <= 500),
  created_at               timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, item_key),
  CHECK ((action = 'COMPENSATING_POSTING') = (amount_minor IS NOT NULL)),
  CHECK (action <> 'COMPENSATING_POSTING' OR status <> 'FIXED' OR transaction_id IS NOT NULL)
);

-- fix-failed-pending looks up the request of a failure by its reference id.
CREATE INDEX ledger_transactions_reference_id ON ledger_transactions (reference_id, tx_type);

-- Locks the snapshot rows of the given accounts in ledger_post's order (account, bucket,
-- currency), so a recomputation and a concurrent posting queue behind each other and never
-- deadlock. A bucket that has entries but no snapshot row (a damaged cache) gets a zero row
-- first, so a posting racing the recomputation waits on that row too; p_world_available also
-- locks system:world's AVAILABLE row in every currency the accounts use (the other leg of a
-- compensating posting). Runs inside the caller's transaction; the locks last until it ends.
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
      SELECT DISTINCT e.account_id, e.bucket, e.currency FROM ledger_entries e WHERE e.account_id = ANY (p_account_ids)
    ), world AS (
      SELECT w.id AS account_id, 'AVAILABLE'::text AS bucket, c.currency
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
