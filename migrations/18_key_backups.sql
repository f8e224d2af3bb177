-- Key backups and the key operations already accepted (docs/security.md, docs/protocol.md 9.3 to 9.5).
--
-- A backup is an encrypted seed, opaque to the server, stored per public key and device. The
-- first backup of a public key needs no signature (the interface's rule, under rate limiting);
-- every later write and every recovery needs an Ed25519 signature by that key over the spec's
-- message, fresh within CLOCK_TOLERANCE_MS. The service takes a transaction-scoped advisory lock
-- on the public key before deciding, so two unsigned "first" backups of one key cannot both win.
CREATE TABLE key_backups (
  public_key     text NOT NULL CHECK (char_length(public_key) = 64 AND public_key !~ '[^0-9a-f]'),
  device_id      text NOT NULL CHECK (char_length(device_id) BETWEEN 1 AND 128 AND device_id !~ '[^A-Za-z0-9._-]'),
  encrypted_seed bytea NOT NULL CHECK (octet_length(encrypted_seed) BETWEEN 16 AND 1024),
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (public_key, device_id)
);

-- Each signed key operation is accepted once: its message's SHA-256 is recorded in the same
-- transaction as its effect, and a second one (replayed, or signed again) finds it here. A row is
-- needed only while its timestamp is fresh; after `forget_after` the freshness check refuses
-- the message anyway, and the row may be pruned.
CREATE TABLE key_operation_authorizations (
  message_hash bytea PRIMARY KEY CHECK (octet_length(message_hash) = 32),
  operation    text NOT NULL CHECK (operation IN ('backup', 'recover')),
  public_key   text NOT NULL CHECK (char_length(public_key) = 64 AND public_key !~ '[^0-9a-f]'),
  device_id    text NOT NULL CHECK (char_length(device_id) BETWEEN 1 AND 128),
  accepted_at  timestamptz NOT NULL DEFAULT now(),
  forget_after timestamptz NOT NULL
);
CREATE INDEX key_operation_authorizations_forget_after ON key_operation_authorizations (forget_after);
