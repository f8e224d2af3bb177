-- The operator's side (docs/operations-console.md): what the admin dashboards read without scanning
-- the big tables, and the events the realtime streams send.
--
-- * stats_counters: totals kept up to date by the transactions that change a PLC, a redemption, a
--   charge, a webhook event or an owner's activation, so GET /api/v1/admin/stats and
--   /api/v1/admin/acquisition read a few hundred rows whatever the size of the tables. A change
--   appends a delta row (stats_counter_deltas) instead of updating a counter row, so concurrent
--   transactions never wait on each other for a counter (the ledger's credits do the same,
--   migration 12); about one statement in 32 folds the deltas into the counters, when no other
--   fold runs (an advisory lock tried, never waited for), so the deltas stay a few hundred rows.
--   A reader sums counters and deltas in one statement: a fold commits its delete and its add
--   together, so a reader sees either side of it, never both or neither.
-- * owner_activation, device_activation: when an owner or a device was first seen, first issued a
--   PLC, first redeemed (the acquisition dashboard's funnel).
-- * realtime_events: one row per change of a PLC, a redemption or a charge, written by the same
--   transaction, and a NOTIFY on channel realtime_events at its commit (payload empty: listeners
--   read the table; at most one writing transaction at a time sends it, see ops_notify), so every
--   API replica streams every change. Rows are ordered by the writing
--   transaction's id, then their own id: a reader takes only rows of transactions older than every
--   transaction still running (pg_snapshot_xmin), so an event can never appear behind a position
--   a reader has already passed (db/realtime-events.ts). Bounded by the API's pruning.
-- * feature_flags: the canary rollout configuration (`npm run admin -- flag ...`).
-- * ledger_checks: the latest full ledger check (totals, invariants) for the stats dashboard.
-- * admin_users.tokens_valid_after: a password change or a disable ends the user's tokens.
--
-- Triggers are statement-level with transition tables: one call per statement, however many rows
-- it changes (a transfer batch updates several PLCs in one statement).

ALTER TABLE admin_users ADD COLUMN tokens_valid_after timestamptz;

CREATE TABLE stats_counters (
  metric       text NOT NULL CHECK (char_length(metric) BETWEEN 1 AND 64),
  dim          text NOT NULL CHECK (char_length(dim) BETWEEN 1 AND 128),
  count        bigint NOT NULL DEFAULT 0,
  amount_minor bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (metric, dim)
);

CREATE TABLE stats_counter_deltas (
  id           bigint GENERATED ALWAYS AS IDENTITY,
  metric       text NOT NULL,
  dim          text NOT NULL,
  count        bigint NOT NULL,
  amount_minor bigint NOT NULL DEFAULT 0
);

-- Folds every committed delta into the counters, unless another fold runs (then nothing: the
-- deltas wait for the next one). Returns the number of delta rows folded.
CREATE FUNCTION stats_fold_deltas() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_folded bigint;
BEGIN
  -- 0x5354415453 ('STATS'): the fold's advisory lock key.
  IF NOT pg_try_advisory_xact_lock(358486332499) THEN
    RETURN 0;
  END IF;
  WITH moved AS (
    DELETE FROM stats_counter_deltas RETURNING metric, dim, count, amount_minor
  ), summed AS (
    SELECT metric, dim, sum(count)::bigint AS count, sum(amount_minor)::bigint AS amount_minor, count(*) AS n
      FROM moved GROUP BY metric, dim
  ), added AS (
    INSERT INTO stats_counters AS s (metric, dim, count, amount_minor)
    SELECT metric, dim, count, amount_minor FROM summed
    ON CONFLICT (metric, dim) DO UPDATE SET count = s.count + EXCLUDED.count, amount_minor = s.amount_minor + EXCLUDED.amount_minor
  )
  SELECT coalesce(sum(n), 0)::bigint INTO v_folded FROM summed;
  RETURN v_folded;
END $$;

-- The UTC day of a timestamp, as counters name it.
CREATE FUNCTION stats_day(p_at timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')
$$;

-- The settlement-time histogram's bucket of a duration: bucket i holds durations up to the i-th
-- bound (ms), the last bucket everything longer. src/ops/settle-latency.ts has the same bounds.
CREATE FUNCTION stats_latency_bucket(p_ms double precision) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
  SELECT coalesce(
    (SELECT i - 1 FROM unnest(ARRAY[100, 250, 500, 1000, 2000, 5000, 10000, 30000, 60000, 120000, 300000, 600000,
                                    1800000, 3600000, 14400000, 86400000]::double precision[]) WITH ORDINALITY AS b(bound, i)
      WHERE p_ms <= b.bound ORDER BY i LIMIT 1),
    16)
$$;

-- Results of full ledger checks (ledger_violations() and the totals per bucket), written by the
-- ledger-check workflow (a Temporal schedule) and by `npm run ledger -- verify`: the stats
-- dashboard shows the latest one instead of checking millions of rows per request.
CREATE TABLE ledger_checks (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  source           text NOT NULL CHECK (char_length(source) BETWEEN 1 AND 100),
  started_at       timestamptz NOT NULL,
  finished_at      timestamptz NOT NULL DEFAULT now(),
  ok               boolean NOT NULL,
  violations_count integer NOT NULL CHECK (violations_count >= 0),
  -- The first violations found (at most 20), and the totals per currency, bucket and account kind.
  violations       jsonb NOT NULL,
  totals           jsonb NOT NULL,
  CHECK (ok = (violations_count = 0))
);
CREATE INDEX ledger_checks_finished ON ledger_checks (finished_at DESC);

CREATE TABLE owner_activation (
  owner_id            text PRIMARY KEY,
  first_seen_at       timestamptz NOT NULL,
  first_plc_at        timestamptz,
  first_redemption_at timestamptz
);
CREATE INDEX owner_activation_first_seen ON owner_activation (first_seen_at);

CREATE TABLE device_activation (
  device_id           text PRIMARY KEY,
  first_seen_at       timestamptz NOT NULL,
  first_plc_at        timestamptz,
  first_redemption_at timestamptz
);

CREATE TABLE realtime_events (
  xact_id    xid8 NOT NULL,
  id         bigint GENERATED ALWAYS AS IDENTITY,
  kind       text NOT NULL CHECK (kind IN ('plc', 'redemption', 'charge')),
  subject_id text NOT NULL CHECK (char_length(subject_id) <= 100),
  -- The PLC the event is about (a PLC's own change, or its redemption): what a wallet follows.
  token_id   uuid,
  status     text NOT NULL,
  payload    jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (xact_id, id)
);

-- The newest position pruned: a resume from at or before it may have missed events.
CREATE TABLE realtime_events_horizon (
  one     boolean PRIMARY KEY DEFAULT true CHECK (one),
  xact_id xid8 NOT NULL,
  id      bigint NOT NULL
);
INSERT INTO realtime_events_horizon (xact_id, id) VALUES ('0'::xid8, 0);

CREATE TABLE feature_flags (
  name                 text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]{1,62}$'),
  description          text NOT NULL CHECK (char_length(description) BETWEEN 1 AND 500),
  enabled              boolean NOT NULL DEFAULT false,
  -- Share of devices (or meshes) in the rollout, by their hashed id (src/ops/canary.ts).
  rollout_percent      numeric(5, 2) NOT NULL DEFAULT 0 CHECK (rollout_percent BETWEEN 0 AND 100),
  unit                 text NOT NULL DEFAULT 'device' CHECK (unit IN ('device', 'mesh')),
  -- Eligibility rules beyond the percentage (docs/operations-console.md, "Canary").
  min_reputation_tier  text CHECK (char_length(min_reputation_tier) <= 32),
  exclude_blocked_keys boolean NOT NULL DEFAULT false,
  updated_at           timestamptz NOT NULL DEFAULT now(),
  updated_by           text NOT NULL DEFAULT 'migration' CHECK (char_length(updated_by) <= 100)
);
INSERT INTO feature_flags (name, description, enabled, rollout_percent, unit) VALUES
  ('plc_live_events', 'A wallet follows its PLC as a stream of Server-Sent Events (GET /api/v1/plc/{token_id}/events)', true, 100, 'device');

-- ---------------------------------------------------------------------------------------------
-- Triggers
-- ---------------------------------------------------------------------------------------------

-- Wakes the listening API processes. NOTIFY takes a database-wide lock at commit that serializes
-- the commits of every notifying transaction (measured: 4 connections registering first hops went
-- from about 600 to about 300 statements a second), so it is a wake-up, not a message: at most one
-- writing transaction at a time sends it (an advisory lock tried, never waited for). A transaction
-- that skipped it has its events read at the next wake-up, or at the reader's poll
-- (REALTIME_POLL_MS) at the latest; nothing is lost, events are read from the table.
CREATE FUNCTION ops_notify() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  -- 0x4E4F54494659 ('NOTIFY'): the wake-up's advisory lock key.
  IF pg_try_advisory_xact_lock(86089250572633) THEN
    PERFORM pg_notify('realtime_events', '');
  END IF;
END $$;

CREATE FUNCTION stats_maybe_fold() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF random() < 1.0 / 32 THEN
    PERFORM stats_fold_deltas();
  END IF;
END $$;

CREATE FUNCTION ops_plcs_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_xid xid8 := pg_current_xact_id();
BEGIN
  INSERT INTO stats_counter_deltas (metric, dim, count, amount_minor)
  SELECT 'plc_status', n.status || ':' || n.currency, count(*), sum(n.amount_minor) FROM new_rows n GROUP BY n.status, n.currency
  UNION ALL
  SELECT 'plc_issued_day', stats_day(n.registered_at) || ':' || n.currency, count(*), sum(n.amount_minor)
    FROM new_rows n GROUP BY stats_day(n.registered_at), n.currency;

  WITH firsts AS (
    UPDATE owner_activation o SET first_plc_at = f.at
      FROM (SELECT n.issuer_owner_id, min(n.registered_at) AS at FROM new_rows n GROUP BY n.issuer_owner_id) f
     WHERE o.owner_id = f.issuer_owner_id AND o.first_plc_at IS NULL
    RETURNING o.first_plc_at, o.first_seen_at
  )
  INSERT INTO stats_counter_deltas (metric, dim, count)
  SELECT 'acq_first_plc_day', stats_day(first_plc_at), count(*) FROM firsts GROUP BY stats_day(first_plc_at)
  UNION ALL
  SELECT 'acq_cohort_plc', stats_day(first_seen_at), count(*) FROM firsts GROUP BY stats_day(first_seen_at);

  WITH seen AS (
    INSERT INTO device_activation AS d (device_id, first_seen_at, first_plc_at)
    SELECT n.device_id, min(n.registered_at), min(n.registered_at) FROM new_rows n GROUP BY n.device_id
    ON CONFLICT (device_id) DO UPDATE SET first_plc_at = EXCLUDED.first_plc_at WHERE d.first_plc_at IS NULL
    RETURNING d.first_seen_at, d.first_plc_at, (d.xmax = 0) AS inserted
  )
  INSERT INTO stats_counter_deltas (metric, dim, count)
  SELECT 'acq_new_devices_day', stats_day(first_seen_at), count(*) FROM seen WHERE inserted GROUP BY stats_day(first_seen_at)
  UNION ALL
  SELECT 'acq_device_first_plc_day', stats_day(first_plc_at), count(*) FROM seen GROUP BY stats_day(first_plc_at);

  INSERT INTO realtime_events (xact_id, kind, subject_id, token_id, status, payload)
  SELECT v_xid, 'plc', n.token_id::text, n.token_id, n.status,
         jsonb_build_object('token_id', n.token_id, 'status', n.status, 'chain_length', n.chain_length,
                            'amount_minor', n.amount_minor::text, 'currency', n.currency, 'redemption_id', n.redemption_id)
    FROM new_rows n;
  PERFORM ops_notify();
  PERFORM stats_maybe_fold();
  RETURN NULL;
END $$;

CREATE FUNCTION ops_plcs_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_xid xid8 := pg_current_xact_id();
BEGIN
  -- Only rows whose status, chain or redemption changed are news (a pointer to a booking is not).
  WITH changed AS (
    SELECT n.token_id, n.status, n.chain_length, n.amount_minor, n.currency, n.redemption_id, n.status_changed_at,
           o.status AS old_status
      FROM new_rows n JOIN old_rows o USING (token_id)
     WHERE n.status IS DISTINCT FROM o.status OR n.chain_length IS DISTINCT FROM o.chain_length
        OR n.redemption_id IS DISTINCT FROM o.redemption_id
  ), deltas AS (
    INSERT INTO stats_counter_deltas (metric, dim, count, amount_minor)
    SELECT 'plc_status', c.old_status || ':' || c.currency, -count(*), -sum(c.amount_minor)
      FROM changed c WHERE c.status <> c.old_status GROUP BY c.old_status, c.currency
    UNION ALL
    SELECT 'plc_status', c.status || ':' || c.currency, count(*), sum(c.amount_minor)
      FROM changed c WHERE c.status <> c.old_status GROUP BY c.status, c.currency
    UNION ALL
    SELECT 'plc_redeemed_day', stats_day(c.status_changed_at) || ':' || c.currency, count(*), sum(c.amount_minor)
      FROM changed c WHERE c.status = 'REDEEMED' AND c.old_status <> 'REDEEMED' GROUP BY stats_day(c.status_changed_at), c.currency
  )
  INSERT INTO realtime_events (xact_id, kind, subject_id, token_id, status, payload)
  SELECT v_xid, 'plc', c.token_id::text, c.token_id, c.status,
         jsonb_build_object('token_id', c.token_id, 'status', c.status, 'chain_length', c.chain_length,
                            'amount_minor', c.amount_minor::text, 'currency', c.currency, 'redemption_id', c.redemption_id)
    FROM changed c;
  IF FOUND THEN
    PERFORM ops_notify();
    PERFORM stats_maybe_fold();
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER plcs_ops_inserted AFTER INSERT ON plcs REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ops_plcs_inserted();
CREATE TRIGGER plcs_ops_updated AFTER UPDATE ON plcs REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ops_plcs_updated();

-- A hop registered from a device never seen before is a new device.
CREATE FUNCTION ops_transfers_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH seen AS (
    INSERT INTO device_activation (device_id, first_seen_at)
    SELECT DISTINCT n.device_id, now() FROM new_rows n
    ON CONFLICT (device_id) DO NOTHING
    RETURNING first_seen_at
  )
  INSERT INTO stats_counter_deltas (metric, dim, count)
  SELECT 'acq_new_devices_day', stats_day(first_seen_at), count(*) FROM seen GROUP BY stats_day(first_seen_at);
  RETURN NULL;
END $$;
CREATE TRIGGER plc_transfers_ops_inserted AFTER INSERT ON plc_transfers REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ops_transfers_inserted();

CREATE FUNCTION ops_accounts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH opened AS (
    INSERT INTO owner_activation (owner_id, first_seen_at)
    SELECT n.owner_id, n.created_at FROM new_rows n WHERE n.kind = 'user'
    ON CONFLICT (owner_id) DO NOTHING
    RETURNING first_seen_at
  )
  INSERT INTO stats_counter_deltas (metric, dim, count)
  SELECT 'acq_new_owners_day', stats_day(first_seen_at), count(*) FROM opened GROUP BY stats_day(first_seen_at);
  RETURN NULL;
END $$;
CREATE TRIGGER ledger_accounts_ops_inserted AFTER INSERT ON ledger_accounts REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ops_accounts_inserted();

-- The payload of a redemption event: no destination (a Pix key is personal data), no device.
CREATE FUNCTION ops_redemption_payload(p_id uuid, p_token_id uuid, p_status text, p_gateway_status text, p_amount_minor bigint,
                                       p_currency text, p_failure_reason text)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object('redemption_id', p_id, 'token_id', p_token_id, 'status', p_status, 'gateway_status', p_gateway_status,
                            'amount_minor', p_amount_minor::text, 'currency', p_currency, 'failure_reason', p_failure_reason)
$$;

CREATE FUNCTION ops_redemptions_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_xid xid8 := pg_current_xact_id();
BEGIN
  INSERT INTO stats_counter_deltas (metric, dim, count, amount_minor)
  SELECT 'redemption_status', n.status || ':' || n.currency, count(*), sum(n.amount_minor) FROM new_rows n GROUP BY n.status, n.currency;

  WITH firsts AS (
    UPDATE owner_activation o SET first_redemption_at = f.at
      FROM (SELECT n.bearer_owner_id, min(n.created_at) AS at FROM new_rows n GROUP BY n.bearer_owner_id) f
     WHERE o.owner_id = f.bearer_owner_id AND o.first_redemption_at IS NULL
    RETURNING o.first_redemption_at, o.first_seen_at
  )
  INSERT INTO stats_counter_deltas (metric, dim, count)
  SELECT 'acq_first_redemption_day', stats_day(first_redemption_at), count(*) FROM firsts GROUP BY stats_day(first_redemption_at)
  UNION ALL
  SELECT 'acq_cohort_redemption', stats_day(first_seen_at), count(*) FROM firsts GROUP BY stats_day(first_seen_at);

  WITH seen AS (
    INSERT INTO device_activation AS d (device_id, first_seen_at, first_redemption_at)
    SELECT n.device_id, min(n.created_at), min(n.created_at) FROM new_rows n GROUP BY n.device_id
    ON CONFLICT (device_id) DO UPDATE SET first_redemption_at = EXCLUDED.first_redemption_at WHERE d.first_redemption_at IS NULL
    RETURNING d.first_seen_at, d.first_redemption_at, (d.xmax = 0) AS inserted
  )
  INSERT INTO stats_counter_deltas (metric, dim, count)
  SELECT 'acq_new_devices_day', stats_day(first_seen_at), count(*) FROM seen WHERE inserted GROUP BY stats_day(first_seen_at)
  UNION ALL
  SELECT 'acq_device_first_redemption_day', stats_day(first_redemption_at), count(*) FROM seen GROUP BY stats_day(first_redemption_at);

  INSERT INTO realtime_events (xact_id, kind, subject_id, token_id, status, payload)
  SELECT v_xid, 'redemption', n.id::text, n.token_id, n.status,
         ops_redemption_payload(n.id, n.token_id, n.status, n.gateway_status, n.amount_minor, n.currency, n.failure_reason)
    FROM new_rows n;
  PERFORM ops_notify();
  PERFORM stats_maybe_fold();
  RETURN NULL;
END $$;

CREATE FUNCTION ops_redemptions_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_xid xid8 := pg_current_xact_id();
BEGIN
  WITH changed AS (
    SELECT n.id, n.token_id, n.status, n.gateway_status, n.amount_minor, n.currency, n.failure_reason, n.created_at, n.finished_at,
           o.status AS old_status
      FROM new_rows n JOIN old_rows o USING (id)
     WHERE n.status IS DISTINCT FROM o.status OR n.gateway_status IS DISTINCT FROM o.gateway_status
        OR n.gateway_transfer_id IS DISTINCT FROM o.gateway_transfer_id
  ), deltas AS (
    INSERT INTO stats_counter_deltas (metric, dim, count, amount_minor)
    SELECT 'redemption_status', c.old_status || ':' || c.currency, -count(*), -sum(c.amount_minor)
      FROM changed c WHERE c.status <> c.old_status GROUP BY c.old_status, c.currency
    UNION ALL
    SELECT 'redemption_status', c.status || ':' || c.currency, count(*), sum(c.amount_minor)
      FROM changed c WHERE c.status <> c.old_status GROUP BY c.status, c.currency
    UNION ALL
    SELECT 'settle_latency_day',
           stats_day(c.finished_at) || ':' || stats_latency_bucket(extract(epoch FROM c.finished_at - c.created_at) * 1000),
           count(*), 0
      FROM changed c WHERE c.status = 'SETTLED' AND c.old_status <> 'SETTLED' AND c.finished_at IS NOT NULL
     GROUP BY 2
  )
  INSERT INTO realtime_events (xact_id, kind, subject_id, token_id, status, payload)
  SELECT v_xid, 'redemption', c.id::text, c.token_id, c.status,
         ops_redemption_payload(c.id, c.token_id, c.status, c.gateway_status, c.amount_minor, c.currency, c.failure_reason)
    FROM changed c;
  IF FOUND THEN
    PERFORM ops_notify();
    PERFORM stats_maybe_fold();
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER redemptions_ops_inserted AFTER INSERT ON redemptions REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ops_redemptions_inserted();
CREATE TRIGGER redemptions_ops_updated AFTER UPDATE ON redemptions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ops_redemptions_updated();

-- The payload of a charge event: no payer data, no payment instructions.
CREATE FUNCTION ops_charge_payload(p_id uuid, p_status text, p_gateway_status text, p_billing_type text, p_amount_minor bigint, p_currency text)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object('charge_id', p_id, 'status', p_status, 'gateway_status', p_gateway_status, 'billing_type', p_billing_type,
                            'amount_minor', p_amount_minor::text, 'currency', p_currency)
$$;

CREATE FUNCTION ops_charges_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_xid xid8 := pg_current_xact_id();
BEGIN
  INSERT INTO stats_counter_deltas (metric, dim, count, amount_minor)
  SELECT 'charge_status', n.status || ':' || n.currency, count(*), sum(n.amount_minor) FROM new_rows n GROUP BY n.status, n.currency;
  INSERT INTO realtime_events (xact_id, kind, subject_id, token_id, status, payload)
  SELECT v_xid, 'charge', n.id::text, NULL, n.status,
         ops_charge_payload(n.id, n.status, n.gateway_status, n.billing_type, n.amount_minor, n.currency)
    FROM new_rows n;
  PERFORM ops_notify();
  PERFORM stats_maybe_fold();
  RETURN NULL;
END $$;

CREATE FUNCTION ops_charges_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_xid xid8 := pg_current_xact_id();
BEGIN
  WITH changed AS (
    SELECT n.id, n.status, n.gateway_status, n.billing_type, n.amount_minor, n.currency, o.status AS old_status
      FROM new_rows n JOIN old_rows o USING (id)
     WHERE n.status IS DISTINCT FROM o.status OR n.gateway_status IS DISTINCT FROM o.gateway_status
  ), deltas AS (
    INSERT INTO stats_counter_deltas (metric, dim, count, amount_minor)
    SELECT 'charge_status', c.old_status || ':' || c.currency, -count(*), -sum(c.amount_minor)
      FROM changed c WHERE c.status <> c.old_status GROUP BY c.old_status, c.currency
    UNION ALL
    SELECT 'charge_status', c.status || ':' || c.currency, count(*), sum(c.amount_minor)
      FROM changed c WHERE c.status <> c.old_status GROUP BY c.status, c.currency
  )
  INSERT INTO realtime_events (xact_id, kind, subject_id, token_id, status, payload)
  SELECT v_xid, 'charge', c.id::text, NULL, c.status,
         ops_charge_payload(c.id, c.status, c.gateway_status, c.billing_type, c.amount_minor, c.currency)
    FROM changed c;
  IF FOUND THEN
    PERFORM ops_notify();
    PERFORM stats_maybe_fold();
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER charges_ops_inserted AFTER INSERT ON charges REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ops_charges_inserted();
CREATE TRIGGER charges_ops_updated AFTER UPDATE ON charges REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ops_charges_updated();

-- Webhook events per day: received, and how they ended (PROCESSED, IGNORED, DEAD).
CREATE FUNCTION ops_inbox_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO stats_counter_deltas (metric, dim, count)
  SELECT 'webhook_received_day', stats_day(n.received_at), count(*) FROM new_rows n GROUP BY stats_day(n.received_at)
  UNION ALL
  SELECT 'webhook_outcome_day', stats_day(coalesce(n.processed_at, n.received_at)) || ':' || n.status, count(*)
    FROM new_rows n WHERE n.status IN ('PROCESSED', 'IGNORED', 'DEAD') GROUP BY 2;
  RETURN NULL;
END $$;

CREATE FUNCTION ops_inbox_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO stats_counter_deltas (metric, dim, count)
  SELECT 'webhook_outcome_day', stats_day(coalesce(n.processed_at, now())) || ':' || n.status, count(*)
    FROM new_rows n JOIN old_rows o USING (id)
   WHERE n.status <> o.status AND n.status IN ('PROCESSED', 'IGNORED', 'DEAD')
   GROUP BY 2;
  RETURN NULL;
END $$;

CREATE TRIGGER webhook_inbox_ops_inserted AFTER INSERT ON webhook_inbox REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ops_inbox_inserted();
CREATE TRIGGER webhook_inbox_ops_updated AFTER UPDATE ON webhook_inbox REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ops_inbox_updated();

-- ---------------------------------------------------------------------------------------------
-- What exists already: counted once here (a scan of each table, at migration time only).
-- ---------------------------------------------------------------------------------------------

INSERT INTO owner_activation (owner_id, first_seen_at, first_plc_at, first_redemption_at)
SELECT a.owner_id, a.created_at,
       (SELECT min(p.registered_at) FROM plcs p WHERE p.issuer_owner_id = a.owner_id),
       (SELECT min(r.created_at) FROM redemptions r WHERE r.bearer_owner_id = a.owner_id)
  FROM ledger_accounts a WHERE a.kind = 'user';

INSERT INTO device_activation (device_id, first_seen_at, first_plc_at, first_redemption_at)
SELECT s.device_id, min(s.seen_at), min(s.plc_at), min(s.redemption_at)
  FROM (SELECT device_id, registered_at AS seen_at, registered_at AS plc_at, NULL::timestamptz AS redemption_at FROM plcs
        UNION ALL SELECT device_id, registered_at, NULL, NULL FROM plc_transfers
        UNION ALL SELECT device_id, created_at, NULL, created_at FROM redemptions) s
 GROUP BY s.device_id;

INSERT INTO stats_counters (metric, dim, count, amount_minor)
SELECT metric, dim, sum(count)::bigint, sum(amount_minor)::bigint FROM (
  SELECT 'plc_status' AS metric, status || ':' || currency AS dim, 1 AS count, amount_minor FROM plcs
  UNION ALL SELECT 'plc_issued_day', stats_day(registered_at) || ':' || currency, 1, amount_minor FROM plcs
  UNION ALL SELECT 'plc_redeemed_day', stats_day(status_changed_at) || ':' || currency, 1, amount_minor FROM plcs WHERE status = 'REDEEMED'
  UNION ALL SELECT 'redemption_status', status || ':' || currency, 1, amount_minor FROM redemptions
  UNION ALL SELECT 'settle_latency_day', stats_day(finished_at) || ':' || stats_latency_bucket(extract(epoch FROM finished_at - created_at) * 1000), 1, 0
              FROM redemptions WHERE status = 'SETTLED' AND finished_at IS NOT NULL
  UNION ALL SELECT 'charge_status', status || ':' || currency, 1, amount_minor FROM charges
  UNION ALL SELECT 'webhook_received_day', stats_day(received_at), 1, 0 FROM webhook_inbox
  UNION ALL SELECT 'webhook_outcome_day', stats_day(coalesce(processed_at, received_at)) || ':' || status, 1, 0
              FROM webhook_inbox WHERE status IN ('PROCESSED', 'IGNORED', 'DEAD')
  UNION ALL SELECT 'acq_new_owners_day', stats_day(first_seen_at), 1, 0 FROM owner_activation
  UNION ALL SELECT 'acq_first_plc_day', stats_day(first_plc_at), 1, 0 FROM owner_activation WHERE first_plc_at IS NOT NULL
  UNION ALL SELECT 'acq_cohort_plc', stats_day(first_seen_at), 1, 0 FROM owner_activation WHERE first_plc_at IS NOT NULL
  UNION ALL SELECT 'acq_first_redemption_day', stats_day(first_redemption_at), 1, 0 FROM owner_activation WHERE first_redemption_at IS NOT NULL
  UNION ALL SELECT 'acq_cohort_redemption', stats_day(first_seen_at), 1, 0 FROM owner_activation WHERE first_redemption_at IS NOT NULL
  UNION ALL SELECT 'acq_new_devices_day', stats_day(first_seen_at), 1, 0 FROM device_activation
  UNION ALL SELECT 'acq_device_first_plc_day', stats_day(first_plc_at), 1, 0 FROM device_activation WHERE first_plc_at IS NOT NULL
  UNION ALL SELECT 'acq_device_first_redemption_day', stats_day(first_redemption_at), 1, 0 FROM device_activation WHERE first_redemption_at IS NOT NULL
) s GROUP BY metric, dim;
