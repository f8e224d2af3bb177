-- Reputation (issue 21, docs/limits-and-fees.md "Reputation"): a score per owner, moved by events
-- that already happen, in the same transaction as the event (triggers on the rows that record
-- it), never by a batch job. Every event is kept with its delta, reason, resulting score and tier,
-- so an owner's history explains every point; the rules are src/reputation/rules.ts, mirrored
-- here (test/db/reputation.test.ts holds the two equal, and the stored score equal to a replay
-- of the stored events).

CREATE TABLE reputation_tiers (
  tier      text PRIMARY KEY,
  rank      integer NOT NULL UNIQUE,
  score_min integer NOT NULL,
  score_max integer NOT NULL,
  CHECK (score_min <= score_max)
);
INSERT INTO reputation_tiers (tier, rank, score_min, score_max) VALUES
  ('RESTRICTED', 0, 0, 199),
  ('BASIC', 1, 200, 399),
  ('STANDARD', 2, 400, 599),
  ('TRUSTED', 3, 600, 799),
  ('PREMIUM', 4, 800, 1000);

CREATE TABLE reputation_scores (
  owner_id             text PRIMARY KEY CHECK (char_length(owner_id) BETWEEN 1 AND 128),
  score                integer NOT NULL CHECK (score BETWEEN 0 AND 1000),
  tier                 text NOT NULL REFERENCES reputation_tiers (tier),
  -- A proven fork or a blocked key: the owner stays in the lowest tier whatever comes after.
  sanctioned           boolean NOT NULL DEFAULT false,
  -- The owner's first event; ACCOUNT_AGE credits count full 30-day steps from it.
  opened_at            timestamptz NOT NULL DEFAULT now(),
  age_credits          integer NOT NULL DEFAULT 0 CHECK (age_credits BETWEEN 0 AND 12),
  -- Sum of the owner's settled redemptions, in minor units (every currency: all have 2 decimals).
  settled_volume_minor bigint NOT NULL DEFAULT 0 CHECK (settled_volume_minor >= 0),
  events_count         bigint NOT NULL DEFAULT 0,
  updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX reputation_scores_by_score ON reputation_scores (score DESC, owner_id);
CREATE INDEX reputation_scores_by_tier ON reputation_scores (tier, score DESC, owner_id);

CREATE TABLE reputation_events (
  id           bigserial PRIMARY KEY,
  owner_id     text NOT NULL REFERENCES reputation_scores (owner_id),
  kind         text NOT NULL CHECK (kind IN ('ACCOUNT_AGE', 'PLC_ISSUED', 'PLC_EXPIRED', 'REDEMPTION_SETTLED', 'REDEMPTION_FAILED',
                                             'RISK_FLAG', 'FORK_PROVEN', 'KEY_BLOCKED')),
  -- What the event changed: score_after minus the score before it.
  delta        integer NOT NULL,
  reason       text NOT NULL CHECK (char_length(reason) BETWEEN 1 AND 500),
  -- The row the event is about (token id, redemption id, risk flag id, ...): one event per
  -- owner, kind and reference, so recording the same event twice records it once.
  reference    text CHECK (char_length(reference) <= 200),
  -- The facts the rule used: a settled amount, a risk flag's severity.
  amount_minor bigint,
  severity     text,
  score_after  integer NOT NULL CHECK (score_after BETWEEN 0 AND 1000),
  tier_after   text NOT NULL REFERENCES reputation_tiers (tier),
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX reputation_events_by_owner ON reputation_events (owner_id, id DESC);
CREATE UNIQUE INDEX reputation_events_once ON reputation_events (owner_id, kind, reference) WHERE reference IS NOT NULL;

-- The rule delta of an event (src/reputation/rules.ts `ruleDelta`).
CREATE FUNCTION reputation_rule_delta(p_kind text, p_amount_minor bigint, p_severity text) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE p_kind
    WHEN 'ACCOUNT_AGE' THEN 10
    WHEN 'PLC_ISSUED' THEN 1
    WHEN 'PLC_EXPIRED' THEN -3
    WHEN 'REDEMPTION_SETTLED' THEN 5 + least(20, greatest(0, coalesce(p_amount_minor, 0)) / 10000)::integer
    WHEN 'REDEMPTION_FAILED' THEN -10
    WHEN 'RISK_FLAG' THEN CASE p_severity WHEN 'low' THEN -5 WHEN 'medium' THEN -20 WHEN 'high' THEN -50 WHEN 'critical' THEN -100 ELSE -20 END
    ELSE 0
  END
$$;

CREATE FUNCTION reputation_tier_of(p_score integer, p_sanctioned boolean) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN p_sanctioned THEN 'RESTRICTED'
              ELSE (SELECT t.tier FROM reputation_tiers t WHERE p_score BETWEEN t.score_min AND t.score_max) END
$$;

-- Records one event of an owner and moves its score, under the owner's row lock, in the
-- caller's transaction. The owner's row is made at its first event (score 500, STANDARD).
-- Before the event, any ACCOUNT_AGE step the owner has reached since its last event is credited
-- (a full 30 days since opened_at each, at most 12). An event already recorded (same owner,
-- kind and reference) records nothing. Returns the event's id, or NULL when it was a repeat.
CREATE FUNCTION reputation_record(p_owner text, p_kind text, p_reason text, p_reference text, p_amount_minor bigint, p_severity text)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_row reputation_scores%ROWTYPE;
  v_due integer;
  v_score integer;
  v_sanctioned boolean;
  v_tier text;
  v_id bigint;
BEGIN
  INSERT INTO reputation_scores (owner_id, score, tier) VALUES (p_owner, 500, 'STANDARD') ON CONFLICT (owner_id) DO NOTHING;
  SELECT * INTO STRICT v_row FROM reputation_scores WHERE owner_id = p_owner FOR UPDATE;
  IF p_reference IS NOT NULL AND EXISTS (
    SELECT 1 FROM reputation_events e WHERE e.owner_id = p_owner AND e.kind = p_kind AND e.reference = p_reference
  ) THEN
    RETURN NULL;
  END IF;
  v_score := v_row.score;
  v_sanctioned := v_row.sanctioned;
  v_due := least(12, floor(extract(epoch FROM now() - v_row.opened_at) / (30 * 86400))::integer);
  WHILE v_row.age_credits < v_due LOOP
    v_row.age_credits := v_row.age_credits + 1;
    v_tier := reputation_tier_of(least(1000, greatest(0, v_score + 10)), v_sanctioned);
    INSERT INTO reputation_events (owner_id, kind, delta, reason, reference, score_after, tier_after)
    VALUES (p_owner, 'ACCOUNT_AGE', least(1000, greatest(0, v_score + 10)) - v_score,
            'account age: ' || (v_row.age_credits * 30) || ' days', 'age:' || v_row.age_credits,
            least(1000, greatest(0, v_score + 10)), v_tier);
    v_score := least(1000, greatest(0, v_score + 10));
    v_row.events_count := v_row.events_count + 1;
  END LOOP;

  IF p_kind IN ('FORK_PROVEN', 'KEY_BLOCKED') THEN
    v_sanctioned := true;
    v_tier := reputation_tier_of(0, true);
    INSERT INTO reputation_events (owner_id, kind, delta, reason, reference, amount_minor, severity, score_after, tier_after)
    VALUES (p_owner, p_kind, -v_score, p_reason, p_reference, p_amount_minor, p_severity, 0, v_tier) RETURNING id INTO v_id;
    v_score := 0;
  ELSE
    v_tier := reputation_tier_of(least(1000, greatest(0, v_score + reputation_rule_delta(p_kind, p_amount_minor, p_severity))), v_sanctioned);
    INSERT INTO reputation_events (owner_id, kind, delta, reason, reference, amount_minor, severity, score_after, tier_after)
    VALUES (p_owner, p_kind,
            least(1000, greatest(0, v_score + reputation_rule_delta(p_kind, p_amount_minor, p_severity))) - v_score,
            p_reason, p_reference, p_amount_minor, p_severity,
            least(1000, greatest(0, v_score + reputation_rule_delta(p_kind, p_amount_minor, p_severity))), v_tier)
    RETURNING id INTO v_id;
    v_score := least(1000, greatest(0, v_score + reputation_rule_delta(p_kind, p_amount_minor, p_severity)));
  END IF;

  UPDATE reputation_scores
     SET score = v_score, tier = v_tier, sanctioned = v_sanctioned, age_credits = v_row.age_credits,
         settled_volume_minor = settled_volume_minor + CASE WHEN p_kind = 'REDEMPTION_SETTLED' THEN greatest(0, coalesce(p_amount_minor, 0)) ELSE 0 END,
         events_count = v_row.events_count + 1, updated_at = now()
   WHERE owner_id = p_owner;
  RETURN v_id;
END;
$$;

-- The events that already happen, each in its own transaction:
-- a PLC registered (its issuer), a PLC expired (its issuer),
CREATE FUNCTION reputation_on_plc() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM reputation_record(NEW.issuer_owner_id, 'PLC_ISSUED', 'PLC issued', NEW.token_id::text, NEW.amount_minor, NULL);
  ELSIF NEW.status = 'EXPIRED' AND OLD.status IS DISTINCT FROM 'EXPIRED' THEN
    PERFORM reputation_record(NEW.issuer_owner_id, 'PLC_EXPIRED', 'PLC expired unredeemed', NEW.token_id::text, NEW.amount_minor, NULL);
  END IF;
  RETURN NULL;
END;
$$;
CREATE TRIGGER plcs_reputation_issued AFTER INSERT ON plcs FOR EACH ROW EXECUTE FUNCTION reputation_on_plc();
CREATE TRIGGER plcs_reputation_expired AFTER UPDATE OF status ON plcs FOR EACH ROW
  WHEN (NEW.status = 'EXPIRED' AND OLD.status IS DISTINCT FROM 'EXPIRED') EXECUTE FUNCTION reputation_on_plc();

-- a redemption settled or failed (its bearer, who asked for the payout),
CREATE FUNCTION reputation_on_redemption() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status = 'SETTLED' THEN
    PERFORM reputation_record(NEW.bearer_owner_id, 'REDEMPTION_SETTLED', 'redemption settled', NEW.id::text, NEW.amount_minor, NULL);
  ELSE
    PERFORM reputation_record(NEW.bearer_owner_id, 'REDEMPTION_FAILED', 'redemption failed', NEW.id::text, NEW.amount_minor, NULL);
  END IF;
  RETURN NULL;
END;
$$;
CREATE TRIGGER redemptions_reputation AFTER UPDATE OF status ON redemptions FOR EACH ROW
  WHEN (NEW.status IN ('SETTLED', 'FAILED') AND OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION reputation_on_redemption();

-- and a risk flag raised about an owner's conduct (a fork, a second redemption of one PLC; the
-- flags about the service's own work, an overdue expiry or a gateway mismatch, count for no one).
CREATE FUNCTION reputation_on_risk_flag() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM reputation_record(NEW.subject_pubkey, 'RISK_FLAG', 'risk flag ' || NEW.flag_type, NEW.id::text, NULL, NEW.severity);
  RETURN NULL;
END;
$$;
CREATE TRIGGER risk_flags_reputation AFTER INSERT ON risk_flags FOR EACH ROW
  WHEN (char_length(NEW.subject_pubkey) BETWEEN 1 AND 128 AND NEW.flag_type IN ('DOUBLE_SPEND_FORK', 'DOUBLE_REDEMPTION_ATTEMPT'))
  EXECUTE FUNCTION reputation_on_risk_flag();
