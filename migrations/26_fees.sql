-- Fees with consent (issue 21, docs/limits-and-fees.md "Fees"): a versioned fee schedule per rail
-- and reputation tier, each owner's consent to one version, and the version that priced each
-- redemption.
--
-- A version is immutable once published: its rules cannot be updated or deleted, and no rule can
-- be added to a version anyone consented to, so a new version never changes what an earlier
-- consent agreed to. A new schedule is a new version (a migration, or `publishFeeSchedule`).

CREATE TABLE fee_schedule_versions (
  version integer PRIMARY KEY CHECK (version > 0),
  description text NOT NULL CHECK (length(description) BETWEEN 1 AND 500),
  published_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE fee_rules (
  version integer NOT NULL REFERENCES fee_schedule_versions (version),
  rail text NOT NULL CHECK (rail IN ('PIX', 'BOLETO')),
  -- NULL: every tier without a rule of its own in this version and rail.
  tier text CHECK (tier IN ('RESTRICTED', 'BASIC', 'STANDARD', 'TRUSTED', 'PREMIUM')),
  fixed_minor bigint NOT NULL CHECK (fixed_minor >= 0),
  rate_bps integer NOT NULL CHECK (rate_bps BETWEEN 0 AND 10000),
  min_minor bigint NOT NULL CHECK (min_minor >= 0),
  max_minor bigint CHECK (max_minor IS NULL OR max_minor >= min_minor),
  UNIQUE NULLS NOT DISTINCT (version, rail, tier)
);

CREATE TABLE fee_consents (
  owner_id text NOT NULL CHECK (owner_id ~ '^[A-Za-z0-9._-]{1,128}$'),
  version integer NOT NULL REFERENCES fee_schedule_versions (version),
  device_id text NOT NULL CHECK (device_id ~ '^[A-Za-z0-9._-]{1,128}$'),
  -- The signed consent: the time the owner's device signed it and the signature (hex).
  signed_at_ms bigint NOT NULL,
  signature text NOT NULL CHECK (signature ~ '^[0-9a-f]{128}$'),
  consented_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (owner_id, version)
);
-- The consent in force: the owner's latest.
CREATE INDEX fee_consents_latest ON fee_consents (owner_id, consented_at DESC, version DESC);

CREATE FUNCTION fee_schedule_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF EXISTS (SELECT 1 FROM fee_consents WHERE version = NEW.version) THEN
      RAISE EXCEPTION 'fee schedule version % has consents: publish a new version', NEW.version USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'fee schedules are immutable: publish a new version' USING ERRCODE = 'check_violation';
END $$;

CREATE TRIGGER fee_rules_immutable BEFORE INSERT OR UPDATE OR DELETE ON fee_rules
  FOR EACH ROW EXECUTE FUNCTION fee_schedule_immutable();
CREATE TRIGGER fee_schedule_versions_immutable BEFORE UPDATE OR DELETE ON fee_schedule_versions
  FOR EACH ROW EXECUTE FUNCTION fee_schedule_immutable();

-- The version that priced a redemption's fee (NULL: opened before fees had schedules).
ALTER TABLE redemptions ADD COLUMN fee_schedule_version integer REFERENCES fee_schedule_versions (version);

-- Version 1. Pix payouts stay free on every tier: a Pix transfer costs the platform next to
-- nothing and every redemption before this version was free. A boleto payment costs the platform
-- a per-slip fee at the gateway, so it is charged: a fixed part that falls with the tier, a
-- proportional part for the lower tiers, between a minimum and a maximum.
INSERT INTO fee_schedule_versions (version, description)
  VALUES (1, 'Initial schedule: Pix free on every tier; boleto a fixed fee by tier, plus 0.5% (Basic) or 0.25% (Standard), R$ 2.00 to R$ 15.00');

INSERT INTO fee_rules (version, rail, tier, fixed_minor, rate_bps, min_minor, max_minor) VALUES
  (1, 'PIX',    NULL,       0,   0,   0,    NULL),
  (1, 'BOLETO', NULL,       350, 50,  200,  1500),
  (1, 'BOLETO', 'STANDARD',   300, 25,  200,  1500),
  (1, 'BOLETO', 'TRUSTED',     250, 0,   200,  1500),
  (1, 'BOLETO', 'PREMIUM', 200, 0,   200,  1500);

-- A B2B quote: the prices of src/b2b/plans.ts for a monthly volume, held until valid_until.
CREATE TABLE b2b_quotes (
  id uuid PRIMARY KEY,
  monthly_count integer NOT NULL CHECK (monthly_count >= 0),
  average_amount_minor bigint NOT NULL CHECK (average_amount_minor > 0),
  currency text NOT NULL CHECK (currency IN ('BRL', 'USD', 'EUR')),
  -- The answer as given (plans, bands, prices), so the quote holds whatever the plans become.
  quote jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  valid_until timestamptz NOT NULL CHECK (valid_until > created_at)
);
