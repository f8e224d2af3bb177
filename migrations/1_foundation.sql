-- Foundation: administration users and the shared rate-limit store.

CREATE TABLE admin_users (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  username      text NOT NULL UNIQUE CHECK (char_length(username) BETWEEN 3 AND 64),
  -- "scrypt$N$r$p$salt_b64$hash_b64": the parameters travel with the hash so they can be raised
  -- later without invalidating existing passwords.
  password_hash text NOT NULL CHECK (password_hash LIKE 'scrypt$%'),
  role          text NOT NULL CHECK (role IN ('super_admin', 'admin')),
  disabled      boolean NOT NULL DEFAULT false,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_login_at timestamptz
);

-- Fixed-window counters behind every rate limit, shared by all API replicas. UNLOGGED: losing the
-- counters in a crash only resets the windows, and skipping the WAL keeps the hot path cheap.
CREATE UNLOGGED TABLE rate_limit_counters (
  key        text PRIMARY KEY CHECK (char_length(key) <= 512),
  hits       integer NOT NULL CHECK (hits >= 0),
  reset_at   timestamptz NOT NULL
);
CREATE INDEX rate_limit_counters_reset_at ON rate_limit_counters (reset_at);
