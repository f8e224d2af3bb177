-- Per-account throttle of admin logins (issue 17, item 5). The per-address rate limit alone let
-- 30 wrong passwords from 30 addresses all be evaluated. Each login attempt first claims a slot
-- here in one guarded statement (db/admin-login-throttle.ts): the attempt counts as a failure
-- before the password is checked, and the slot is refused while next_attempt_at is ahead, so
-- concurrent attempts on any number of API replicas cannot spend more than the budget. A
-- correct password deletes the row; so does `npm run admin -- unlock <username>`.
--
-- Keyed by the username as typed, not by the user's id: an unknown name is throttled exactly
-- like a known one, so the throttle does not tell which accounts exist.
CREATE TABLE admin_login_throttle (
  username        text PRIMARY KEY CHECK (char_length(username) BETWEEN 1 AND 64),
  -- Consecutive failed (or still running) attempts since the last success or unlock.
  failures        integer NOT NULL CHECK (failures >= 1),
  -- No attempt is evaluated before this: the growing delay, or the end of the lockout.
  next_attempt_at timestamptz NOT NULL,
  locked          boolean NOT NULL DEFAULT false,
  last_attempt_at timestamptz NOT NULL
);
-- Rows idle for long are forgotten (bounded batches, see db/admin-login-throttle.ts).
CREATE INDEX admin_login_throttle_last_attempt ON admin_login_throttle (last_attempt_at);

-- The delay after the n-th consecutive failure, in ms: none for the first free_attempts - 1,
-- then base_ms doubling with each failure (capped at lockout_ms), and lockout_ms from the
-- lockout_failures-th on. One definition, used by the claim's insert and update alike.
CREATE FUNCTION admin_login_delay_ms(failures integer, free_attempts integer, base_ms bigint, lockout_failures integer, lockout_ms bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT CASE
           WHEN failures >= lockout_failures THEN lockout_ms
           WHEN failures >= free_attempts THEN least(lockout_ms::numeric, base_ms * power(2::numeric, failures - free_attempts))::bigint
           ELSE 0
         END
$$;
