-- Reputation that cannot be farmed (issue 34, docs/limits-and-fees.md "Reputation that cannot be
-- farmed"). Sixty PLCs of 0.01 paid between two wallets of one person reached PREMIUM in 79 s:
-- every issue gave +1 and every settlement +5, whatever its size and whoever paid. From here a
-- score grows only from settlements that are economically meaningful (at least the dust
-- threshold), independent (the payer is not the same owner: one device, one account, one backup,
-- or a pair that has only ever paid each other), at most once per payer and window, within a gain
-- cap per window; it decays without activity, a risk flag takes back every point earned, and the
-- upper tiers need an account age and a number of distinct independent counterparties. The rules
-- are src/reputation/rules.ts; test/db/reputation.test.ts holds the two equal.

-- The model's settings: configuration (REPUTATION_* in infra/config.ts), written by the API at
-- start, so tests run with seconds where production has days. One row.
CREATE TABLE reputation_settings (
  id                         boolean PRIMARY KEY DEFAULT true CHECK (id),
  dust_minor                 bigint NOT NULL DEFAULT 1000 CHECK (dust_minor >= 1),
  gain_window_ms             bigint NOT NULL DEFAULT 86400000 CHECK (gain_window_ms >= 1),
  gain_per_window_max        integer NOT NULL DEFAULT 50 CHECK (gain_per_window_max >= 0),
  decay_idle_ms              bigint NOT NULL DEFAULT 2592000000 CHECK (decay_idle_ms >= 1),
  decay_points               integer NOT NULL DEFAULT 10 CHECK (decay_points >= 0),
  trusted_age_min_ms         bigint NOT NULL DEFAULT 2592000000 CHECK (trusted_age_min_ms >= 0),
  trusted_counterparties_min integer NOT NULL DEFAULT 5 CHECK (trusted_counterparties_min >= 0),
  premium_age_min_ms         bigint NOT NULL DEFAULT 7776000000 CHECK (premium_age_min_ms >= 0),
  premium_counterparties_min integer NOT NULL DEFAULT 20 CHECK (premium_counterparties_min >= 0),
  updated_at                 timestamptz NOT NULL DEFAULT now()
);
INSERT INTO reputation_settings DEFAULT VALUES;

-- The decay clock (the last independent settlement, else the first event), the decay steps
-- applied since, and the distinct independent counterparties counted.
ALTER TABLE reputation_scores
  ADD COLUMN last_credit_at timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN decay_steps integer NOT NULL DEFAULT 0 CHECK (decay_steps >= 0),
  ADD COLUMN counterparties integer NOT NULL DEFAULT 0 CHECK (counterparties >= 0);
UPDATE reputation_scores SET last_credit_at = updated_at;

ALTER TABLE reputation_events DROP CONSTRAINT reputation_events_kind_check;
ALTER TABLE reputation_events ADD CONSTRAINT reputation_events_kind_check
  CHECK (kind IN ('ACCOUNT_AGE', 'PLC_ISSUED', 'PLC_EXPIRED', 'REDEMPTION_SETTLED', 'REDEMPTION_FAILED',
                  'RISK_FLAG', 'FORK_PROVEN', 'KEY_BLOCKED', 'INACTIVITY_DECAY'));
-- The facts the rule used besides amount and severity, so a replay needs nothing else: the payer
-- of a settlement, whether it could credit points, and the points limit (the gain the window had
-- left; for a decay, its step).
ALTER TABLE reputation_events
  ADD COLUMN counterparty text CHECK (char_length(counterparty) <= 128),
  ADD COLUMN credit_eligible boolean,
  ADD COLUMN points_limit integer;
CREATE INDEX reputation_events_gains ON reputation_events (owner_id, created_at) WHERE kind = 'REDEMPTION_SETTLED' AND delta > 0;

-- The counterparties an owner was independently paid by; `counted` false when the payer is the
-- same owner as one counted before (two keys of one customer count once).
CREATE TABLE reputation_counterparties (
  owner_id        text NOT NULL REFERENCES reputation_scores (owner_id),
  counterparty_id text NOT NULL CHECK (char_length(counterparty_id) BETWEEN 1 AND 128),
  counted         boolean NOT NULL,
  first_paid_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (owner_id, counterparty_id)
);

CREATE INDEX redemptions_by_bearer ON redemptions (bearer_owner_id);
CREATE INDEX redemptions_by_issuer ON redemptions (issuer_owner_id);
CREATE INDEX plc_transfers_by_sender ON plc_transfers (sender_pubkey);
CREATE INDEX plc_transfers_by_recipient ON plc_transfers (recipient_pubkey);
CREATE INDEX pin_records_by_email ON pin_records (lower(recovery_email)) WHERE recovery_email IS NOT NULL;
CREATE INDEX redemptions_by_device ON redemptions (device_id, bearer_owner_id);
CREATE INDEX key_operation_authorizations_by_key ON key_operation_authorizations (public_key, device_id);

-- The devices a key was used from: the PLCs it issued, the redemptions it asked for, its key
-- backups and recoveries. (A transfer's device is whoever registered it, often the recipient:
-- not counted.)
CREATE FUNCTION reputation_devices(p_owner text) RETURNS TABLE (device_id text) LANGUAGE sql STABLE AS $$
  SELECT p.device_id FROM plcs p WHERE p.issuer_owner_id = p_owner
  UNION SELECT r.device_id FROM redemptions r WHERE r.bearer_owner_id = p_owner
  UNION SELECT b.device_id FROM key_backups b WHERE b.public_key = p_owner
  UNION SELECT a.device_id FROM key_operation_authorizations a WHERE a.public_key = p_owner
$$;

-- Everyone a key ever paid or was paid by: redemptions both ways and registered transfers.
CREATE FUNCTION reputation_partners(p_owner text) RETURNS TABLE (partner text) LANGUAGE sql STABLE AS $$
  SELECT r.issuer_owner_id FROM redemptions r WHERE r.bearer_owner_id = p_owner
  UNION SELECT r.bearer_owner_id FROM redemptions r WHERE r.issuer_owner_id = p_owner
  UNION SELECT t.recipient_pubkey FROM plc_transfers t WHERE t.sender_pubkey = p_owner
  UNION SELECT t.sender_pubkey FROM plc_transfers t WHERE t.recipient_pubkey = p_owner
$$;

-- Two keys of one owner (src/reputation/rules.ts cannot see the tables: this is the one place
-- the rule lives): the same key; keys used from one device; keys of one account (the same
-- recovery e-mail of their PINs); keys under one backup (the same encrypted seed); or a pair that
-- has only ever paid each other.
CREATE FUNCTION reputation_linked(p_a text, p_b text) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT p_a = p_b
    -- p_b's devices (in every call, a payer: the smaller side), each probed for p_a by index.
    OR EXISTS (SELECT 1 FROM reputation_devices(p_b) y
                WHERE EXISTS (SELECT 1 FROM plcs p WHERE p.device_id = y.device_id AND p.issuer_owner_id = p_a)
                   OR EXISTS (SELECT 1 FROM redemptions r WHERE r.device_id = y.device_id AND r.bearer_owner_id = p_a)
                   OR EXISTS (SELECT 1 FROM key_backups k WHERE k.public_key = p_a AND k.device_id = y.device_id)
                   OR EXISTS (SELECT 1 FROM key_operation_authorizations o WHERE o.public_key = p_a AND o.device_id = y.device_id))
    OR EXISTS (SELECT 1 FROM pin_records x JOIN pin_records y ON lower(x.recovery_email) = lower(y.recovery_email)
                WHERE x.owner_id = p_a AND y.owner_id = p_b)
    OR EXISTS (SELECT 1 FROM key_backups x JOIN key_backups y ON x.encrypted_seed = y.encrypted_seed
                WHERE x.public_key = p_a AND y.public_key = p_b)
    OR (NOT EXISTS (SELECT 1 FROM reputation_partners(p_a) p WHERE p.partner <> p_a AND p.partner <> p_b)
        AND NOT EXISTS (SELECT 1 FROM reputation_partners(p_b) p WHERE p.partner <> p_a AND p.partner <> p_b))
$$;

-- The rule delta of an event on a score (src/reputation/rules.ts `ruleDelta`).
DROP FUNCTION reputation_rule_delta(text, bigint, text);
CREATE FUNCTION reputation_rule_delta(p_kind text, p_score integer, p_amount_minor bigint, p_severity text, p_credit_eligible boolean, p_points_limit integer)
RETURNS integer LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE p_kind
    WHEN 'PLC_EXPIRED' THEN -3
    WHEN 'REDEMPTION_SETTLED' THEN
      least(greatest(0, coalesce(p_points_limit, 0)),
            CASE WHEN coalesce(p_credit_eligible, false) AND coalesce(p_amount_minor, 0) > 0
                 THEN 5 + least(20, p_amount_minor / 1000)::integer ELSE 0 END)
    WHEN 'REDEMPTION_FAILED' THEN -10
    WHEN 'RISK_FLAG' THEN least(p_score, 500) - p_score
      + CASE p_severity WHEN 'low' THEN -5 WHEN 'medium' THEN -20 WHEN 'high' THEN -50 WHEN 'critical' THEN -100 ELSE -20 END
    WHEN 'INACTIVITY_DECAY' THEN -least(greatest(0, coalesce(p_points_limit, 0)), greatest(0, p_score - 500))
    ELSE 0
  END
$$;

-- The tier an owner holds: its score's tier lowered to the highest whose gates it meets
-- (src/reputation/rules.ts `gatedTier`).
CREATE FUNCTION reputation_gated_tier(p_score integer, p_sanctioned boolean, p_age_ms double precision, p_counterparties integer)
RETURNS text LANGUAGE sql STABLE AS $$
  SELECT CASE
    WHEN t.tier = 'PREMIUM' AND p_age_ms >= s.premium_age_min_ms AND p_counterparties >= s.premium_counterparties_min THEN 'PREMIUM'
    WHEN t.tier IN ('PREMIUM', 'TRUSTED') AND p_age_ms >= s.trusted_age_min_ms AND p_counterparties >= s.trusted_counterparties_min THEN 'TRUSTED'
    WHEN t.tier IN ('PREMIUM', 'TRUSTED') THEN 'STANDARD'
    ELSE t.tier
  END
  FROM reputation_settings s, (SELECT reputation_tier_of(p_score, p_sanctioned) AS tier) t
$$;

-- An owner's reputation now (src/reputation/rules.ts `currentReputation`): the stored score less
-- the decay due since its last independent settlement, and the gated tier. What limits and fees read.
CREATE FUNCTION reputation_current(p_owner text) RETURNS TABLE (score integer, tier text) LANGUAGE sql STABLE AS $$
  SELECT d.score, reputation_gated_tier(d.score, r.sanctioned, extract(epoch FROM now() - r.opened_at) * 1000, r.counterparties)
    FROM reputation_scores r, reputation_settings s,
         LATERAL (SELECT CASE WHEN r.score <= 500 THEN r.score
                              ELSE r.score - least(r.score - 500, s.decay_points::bigint * least(1000, greatest(0,
                                     floor(extract(epoch FROM now() - r.last_credit_at) * 1000 / s.decay_idle_ms)::bigint - r.decay_steps)))::integer
                         END AS score) d
   WHERE r.owner_id = p_owner
$$;

-- Records one event of an owner and moves its score, under the owner's row lock, in the caller's
-- transaction. The owner's row is made at its first event (score 500, STANDARD). Before the
-- event, the decay steps due since the last independent settlement are recorded. An event
-- already recorded (same owner, kind and reference) records nothing. Returns the event's id, or
-- NULL when it was a repeat. `p_counterparty`: who paid, for a settlement.
CREATE FUNCTION reputation_apply(p_owner text, p_kind text, p_reason text, p_reference text, p_amount_minor bigint, p_severity text, p_counterparty text)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_set reputation_settings%ROWTYPE;
  v_row reputation_scores%ROWTYPE;
  v_window interval;
  v_due bigint;
  v_score integer;
  v_delta integer;
  v_tier text;
  v_id bigint;
  v_independent boolean := false;
  v_eligible boolean;
  v_limit integer;
  v_gained integer;
  v_new_counted integer := 0;
BEGIN
  SELECT * INTO STRICT v_set FROM reputation_settings;
  v_window := make_interval(secs => v_set.gain_window_ms / 1000.0);
  INSERT INTO reputation_scores (owner_id, score, tier) VALUES (p_owner, 500, 'STANDARD') ON CONFLICT (owner_id) DO NOTHING;
  SELECT * INTO STRICT v_row FROM reputation_scores WHERE owner_id = p_owner FOR UPDATE;
  IF p_reference IS NOT NULL AND EXISTS (
    SELECT 1 FROM reputation_events e WHERE e.owner_id = p_owner AND e.kind = p_kind AND e.reference = p_reference
  ) THEN
    RETURN NULL;
  END IF;
  v_score := v_row.score;

  -- Decay: each full idle period since the last independent settlement takes a step back to 500.
  v_due := least(1000, greatest(0, floor(extract(epoch FROM now() - v_row.last_credit_at) * 1000 / v_set.decay_idle_ms)::bigint - v_row.decay_steps));
  WHILE v_due > 0 LOOP
    v_row.decay_steps := v_row.decay_steps + 1;
    v_due := v_due - 1;
    v_delta := reputation_rule_delta('INACTIVITY_DECAY', v_score, NULL, NULL, NULL, v_set.decay_points);
    IF v_delta <> 0 THEN
      INSERT INTO reputation_events (owner_id, kind, delta, reason, reference, points_limit, score_after, tier_after)
      VALUES (p_owner, 'INACTIVITY_DECAY', v_delta, 'no independent settlement since ' || to_char(v_row.last_credit_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
              'decay:' || floor(extract(epoch FROM v_row.last_credit_at) * 1000)::bigint || ':' || v_row.decay_steps,
              v_set.decay_points, v_score + v_delta, reputation_tier_of(v_score + v_delta, v_row.sanctioned));
      v_score := v_score + v_delta;
      v_row.events_count := v_row.events_count + 1;
    ELSE
      -- At or below the start nothing more decays: the rest of the steps are spent at once.
      v_row.decay_steps := v_row.decay_steps + v_due::integer;
      v_due := 0;
    END IF;
  END LOOP;

  IF p_kind = 'REDEMPTION_SETTLED' THEN
    v_independent := p_counterparty IS NOT NULL AND coalesce(p_amount_minor, 0) >= v_set.dust_minor
                     AND NOT reputation_linked(p_owner, p_counterparty);
    -- Once per payer and window, a payer's other keys included (two keys of one owner count once).
    v_eligible := v_independent AND NOT EXISTS (
      SELECT 1 FROM reputation_events e
       WHERE e.owner_id = p_owner AND e.kind = 'REDEMPTION_SETTLED' AND e.delta > 0
         AND e.created_at > now() - v_window
         AND (e.counterparty = p_counterparty OR reputation_linked(e.counterparty, p_counterparty)));
    SELECT coalesce(sum(e.delta), 0)::integer INTO v_gained FROM reputation_events e
     WHERE e.owner_id = p_owner AND e.kind = 'REDEMPTION_SETTLED' AND e.delta > 0 AND e.created_at > now() - v_window;
    v_limit := greatest(0, v_set.gain_per_window_max - v_gained);
    IF v_independent AND NOT EXISTS (SELECT 1 FROM reputation_counterparties c WHERE c.owner_id = p_owner AND c.counterparty_id = p_counterparty) THEN
      -- A payer that is the same owner as one counted before counts once (the latest 100 checked).
      IF NOT EXISTS (SELECT 1 FROM (SELECT c.counterparty_id FROM reputation_counterparties c
                                     WHERE c.owner_id = p_owner AND c.counted ORDER BY c.first_paid_at DESC LIMIT 100) c
                      WHERE reputation_linked(c.counterparty_id, p_counterparty)) THEN
        v_new_counted := 1;
      END IF;
      INSERT INTO reputation_counterparties (owner_id, counterparty_id, counted) VALUES (p_owner, p_counterparty, v_new_counted = 1);
    END IF;
  END IF;

  IF p_kind IN ('FORK_PROVEN', 'KEY_BLOCKED') THEN
    v_row.sanctioned := true;
    v_tier := reputation_tier_of(0, true);
    INSERT INTO reputation_events (owner_id, kind, delta, reason, reference, amount_minor, severity, score_after, tier_after)
    VALUES (p_owner, p_kind, -v_score, p_reason, p_reference, p_amount_minor, p_severity, 0, v_tier) RETURNING id INTO v_id;
    v_score := 0;
  ELSE
    v_delta := least(1000, greatest(0, v_score + reputation_rule_delta(p_kind, v_score, p_amount_minor, p_severity, v_eligible, v_limit))) - v_score;
    v_tier := reputation_tier_of(v_score + v_delta, v_row.sanctioned);
    INSERT INTO reputation_events (owner_id, kind, delta, reason, reference, amount_minor, severity, counterparty, credit_eligible, points_limit, score_after, tier_after)
    VALUES (p_owner, p_kind, v_delta, p_reason, p_reference, p_amount_minor, p_severity, p_counterparty, v_eligible, v_limit, v_score + v_delta, v_tier)
    RETURNING id INTO v_id;
    v_score := v_score + v_delta;
  END IF;

  UPDATE reputation_scores
     SET score = v_score, tier = v_tier, sanctioned = v_row.sanctioned,
         last_credit_at = CASE WHEN v_independent THEN now() ELSE last_credit_at END,
         decay_steps = CASE WHEN v_independent THEN 0 ELSE v_row.decay_steps END,
         counterparties = counterparties + v_new_counted,
         -- Only independent settlements add to the volume the 24-hour limit grows with.
         settled_volume_minor = settled_volume_minor + CASE WHEN v_independent THEN greatest(0, coalesce(p_amount_minor, 0)) ELSE 0 END,
         events_count = v_row.events_count + 1, updated_at = now()
   WHERE owner_id = p_owner;
  RETURN v_id;
END;
$$;

-- The earlier entry point keeps its signature (the PLC and risk-flag triggers, recordReputationEvent).
CREATE OR REPLACE FUNCTION reputation_record(p_owner text, p_kind text, p_reason text, p_reference text, p_amount_minor bigint, p_severity text)
RETURNS bigint LANGUAGE sql AS $$
  SELECT reputation_apply(p_owner, p_kind, p_reason, p_reference, p_amount_minor, p_severity, NULL)
$$;

-- A settlement names its payer: the sender of the last registered transfer to the bearer, else the issuer.
CREATE OR REPLACE FUNCTION reputation_on_redemption() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_payer text;
BEGIN
  IF NEW.status = 'SETTLED' THEN
    SELECT t.sender_pubkey INTO v_payer FROM plc_transfers t
     WHERE t.token_id = NEW.token_id AND t.recipient_pubkey = NEW.bearer_pubkey ORDER BY t.position DESC LIMIT 1;
    PERFORM reputation_apply(NEW.bearer_owner_id, 'REDEMPTION_SETTLED', 'redemption settled', NEW.id::text, NEW.amount_minor, NULL,
                             coalesce(v_payer, NEW.issuer_owner_id));
  ELSE
    PERFORM reputation_apply(NEW.bearer_owner_id, 'REDEMPTION_FAILED', 'redemption failed', NEW.id::text, NEW.amount_minor, NULL, NULL);
  END IF;
  RETURN NULL;
END;
$$;
