-- PIN records and PIN reset tokens (docs/security.md).
--
-- A PIN belongs to a wallet owner (the owner_id of the balance routes). The client sends its own
-- hash of the PIN (32 bytes) and the salt it used; the server keeps only a slow hash of that hash:
-- scrypt over HMAC-SHA256(PIN_PEPPER, ...), with a salt of its own per record. `pepper_id` names
-- the pepper a record was made under (a short HMAC of a fixed label), so a deployment with
-- another PIN_PEPPER refuses to evaluate instead of counting every right PIN as a failure.
--
-- Lockout: `failed_attempts` counts consecutive failures; an attempt is reserved (counted) by
-- one guarded UPDATE before the slow hash is compared, so concurrent attempts through any number
-- of API replicas evaluate at most 5 (db/security-pins.ts). The fifth reservation starts a lock
-- (`locked_until`), whose length doubles with each lockout since the last success (`lockouts`).
CREATE TABLE pin_records (
  owner_id           text PRIMARY KEY CHECK (char_length(owner_id) BETWEEN 1 AND 128 AND owner_id !~ '[^A-Za-z0-9._-]'),
  client_salt        text NOT NULL CHECK (char_length(client_salt) BETWEEN 32 AND 128 AND char_length(client_salt) % 2 = 0 AND client_salt !~ '[^0-9a-f]'),
  verifier           bytea NOT NULL CHECK (octet_length(verifier) = 32),
  server_salt        bytea NOT NULL CHECK (octet_length(server_salt) = 16),
  -- scrypt's parameters, kept per record so that they can be raised without invalidating old ones.
  scrypt_log2_n      smallint NOT NULL CHECK (scrypt_log2_n BETWEEN 10 AND 22),
  scrypt_r           smallint NOT NULL CHECK (scrypt_r BETWEEN 1 AND 32),
  scrypt_p           smallint NOT NULL CHECK (scrypt_p BETWEEN 1 AND 16),
  pepper_id          text NOT NULL CHECK (char_length(pepper_id) = 16 AND pepper_id !~ '[^0-9a-f]'),
  -- Raised on every change of the PIN: a success computed against an older PIN changes nothing.
  credential_version bigint NOT NULL DEFAULT 1 CHECK (credential_version >= 1),
  recovery_email     text CHECK (char_length(recovery_email) BETWEEN 3 AND 254),
  failed_attempts    smallint NOT NULL DEFAULT 0 CHECK (failed_attempts BETWEEN 0 AND 5),
  locked_until       timestamptz,
  lockouts           integer NOT NULL DEFAULT 0 CHECK (lockouts >= 0),
  registered_at      timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  -- A lock exists exactly when the fifth consecutive failure was reserved; it may lie in the past
  -- (the lock has ended) until the next attempt starts a new count.
  CONSTRAINT pin_records_lock_check CHECK ((failed_attempts = 5) = (locked_until IS NOT NULL))
);

-- The live reset token of an owner: one at most, so a new request replaces (voids) the older
-- one. Only the token's SHA-256 is kept; the token itself exists in the e-mail alone. A token is
-- used once (`consumed_at`), and any change of the PIN or of the e-mail deletes it.
CREATE TABLE pin_reset_tokens (
  owner_id    text PRIMARY KEY REFERENCES pin_records (owner_id) ON DELETE CASCADE,
  token_hash  bytea NOT NULL UNIQUE CHECK (octet_length(token_hash) = 32),
  request_id  uuid NOT NULL,
  issued_at   timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  consumed_at timestamptz,
  CHECK (expires_at > issued_at)
);
