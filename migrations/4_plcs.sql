-- PLCs (Cryptographic Settlement Promises), their transfer chains, risk flags and the stored
-- responses behind Idempotency-Key. PostgreSQL is the source of truth for every state
-- transition: each is one guarded UPDATE that only one caller can win.

CREATE TABLE plcs (
  token_id         uuid PRIMARY KEY,
  version          text NOT NULL CHECK (version = '2.0'),
  issuer_pubkey    text NOT NULL CHECK (issuer_pubkey ~ '^[0-9a-f]{64}$'),
  -- The issuer's ledger account: wallets are identified by their public key (docs/plc.md).
  issuer_owner_id  text NOT NULL,
  amount_minor     bigint NOT NULL CHECK (amount_minor > 0),
  currency         text NOT NULL CHECK (currency IN ('BRL', 'USD', 'EUR')),
  created_at       timestamptz NOT NULL,
  created_at_ms    bigint NOT NULL,
  expires_at       timestamptz NOT NULL,
  expires_at_ms    bigint NOT NULL,
  nonce            text NOT NULL CHECK (nonce ~ '^[0-9a-f]{32}$'),
  commitment_hash  text NOT NULL UNIQUE CHECK (commitment_hash ~ '^[0-9a-f]{64}$'),
  signature        text NOT NULL CHECK (signature ~ '^[0-9a-f]{128}$'),
  status           text NOT NULL CHECK (status IN ('ISSUED', 'TRANSFERRED', 'REDEEMED', 'EXPIRED', 'CANCELLED')),
  chain_length     integer NOT NULL DEFAULT 0 CHECK (chain_length BETWEEN 0 AND 64),
  -- Hash a next record must link to (the commitment hash while the chain is empty).
  head_hash        text NOT NULL CHECK (head_hash ~ '^[0-9a-f]{64}$'),
  bearer_pubkey    text NOT NULL CHECK (bearer_pubkey ~ '^[0-9a-f]{64}$'),
  device_id        text NOT NULL,
  -- Set while a redemption is in flight, and kept once it settles: the double-spend guard.
  redemption_id    uuid,
  issue_tx_id      uuid NOT NULL,
  final_tx_id      uuid,
  settlement_tx_id uuid,
  registered_at    timestamptz NOT NULL DEFAULT now(),
  status_changed_at timestamptz NOT NULL DEFAULT now(),
  CHECK (expires_at > created_at),
  CHECK (status <> 'ISSUED' OR chain_length = 0),
  CHECK (status NOT IN ('TRANSFERRED', 'REDEEMED') OR chain_length > 0),
  CHECK (status NOT IN ('EXPIRED', 'CANCELLED') OR final_tx_id IS NOT NULL)
);
CREATE INDEX plcs_issuer_status ON plcs (issuer_pubkey, status);
CREATE INDEX plcs_issuer_owner_created ON plcs (issuer_owner_id, created_at);
CREATE INDEX plcs_status_expires ON plcs (status, expires_at);
CREATE INDEX plcs_bearer ON plcs (bearer_pubkey);

CREATE TABLE plc_transfers (
  token_id         uuid NOT NULL REFERENCES plcs (token_id),
  position         integer NOT NULL CHECK (position >= 0),
  sender_pubkey    text NOT NULL CHECK (sender_pubkey ~ '^[0-9a-f]{64}$'),
  recipient_pubkey text NOT NULL CHECK (recipient_pubkey ~ '^[0-9a-f]{64}$'),
  timestamp_ms     bigint NOT NULL,
  nonce            text NOT NULL CHECK (nonce ~ '^[0-9a-f]{32}$'),
  prev_hash        text NOT NULL CHECK (prev_hash ~ '^[0-9a-f]{64}$'),
  signature        text NOT NULL CHECK (signature ~ '^[0-9a-f]{128}$'),
  record_hash      text NOT NULL CHECK (record_hash ~ '^[0-9a-f]{64}$'),
  device_id        text NOT NULL,
  registered_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (token_id, position),
  -- The fork guard: one successor per previous hash, whoever registers first.
  CONSTRAINT plc_transfers_one_successor UNIQUE (token_id, prev_hash),
  CONSTRAINT plc_transfers_nonce_unique UNIQUE (token_id, nonce),
  UNIQUE (record_hash)
);

CREATE TABLE risk_flags (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  flag_type      text NOT NULL CHECK (flag_type IN ('DOUBLE_SPEND_FORK', 'DOUBLE_REDEMPTION_ATTEMPT', 'OVERDUE_EXPIRY')),
  severity       text NOT NULL CHECK (severity IN ('low', 'medium', 'high', 'critical')),
  subject_pubkey text,
  token_id       uuid,
  -- One flag per distinct incident, however often the same evidence is presented.
  dedupe_key     text NOT NULL UNIQUE,
  details        jsonb NOT NULL DEFAULT '{}',
  occurrences    integer NOT NULL DEFAULT 1 CHECK (occurrences >= 1),
  resolved       boolean NOT NULL DEFAULT false,
  resolved_at    timestamptz,
  resolved_by    text,
  resolution_note text CHECK (char_length(resolution_note) <= 1000),
  created_at     timestamptz NOT NULL DEFAULT now(),
  last_seen_at   timestamptz NOT NULL DEFAULT now(),
  CHECK (resolved = (resolved_at IS NOT NULL))
);
CREATE INDEX risk_flags_open ON risk_flags (resolved, severity, created_at DESC);
CREATE INDEX risk_flags_subject ON risk_flags (subject_pubkey);

-- Stored answers for Idempotency-Key (create, transfer, redeem): replayed within the window.
CREATE TABLE idempotency_records (
  scope           text NOT NULL CHECK (char_length(scope) <= 100),
  key             text NOT NULL CHECK (char_length(key) BETWEEN 1 AND 128),
  request_hash    text NOT NULL,
  state           text NOT NULL CHECK (state IN ('IN_PROGRESS', 'COMPLETED')),
  response_status integer,
  response_body   jsonb,
  created_at      timestamptz NOT NULL DEFAULT now(),
  expires_at      timestamptz NOT NULL,
  PRIMARY KEY (scope, key),
  CHECK (state = 'IN_PROGRESS' OR response_status IS NOT NULL)
);
CREATE INDEX idempotency_records_expires ON idempotency_records (expires_at);
