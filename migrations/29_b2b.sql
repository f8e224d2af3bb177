-- Business customers (issue 24, docs/b2b.md): sign-up and the admin's decisions, the API
-- credentials issued on approval, the nonces of signed requests, and the POS batch syncs.

CREATE TABLE b2b_customers (
  id            uuid PRIMARY KEY,
  legal_name    text NOT NULL CHECK (char_length(legal_name) BETWEEN 2 AND 200),
  -- The CNPJ's 14 digits, check digits verified by the API (src/b2b/cnpj.ts); one sign-up per CNPJ.
  tax_id        text NOT NULL UNIQUE CHECK (char_length(tax_id) = 14 AND tax_id !~ '[^0-9]'),
  contact_email text NOT NULL CHECK (char_length(contact_email) BETWEEN 3 AND 254),
  plan_id       text NOT NULL CHECK (plan_id IN ('STARTER', 'BUSINESS', 'ENTERPRISE')),
  -- Where the customer's POS redemptions are paid: a Pix key, its CNPJ unless it gave another.
  pix_key       text NOT NULL CHECK (char_length(pix_key) BETWEEN 1 AND 140),
  status        text NOT NULL DEFAULT 'PENDING_REVIEW' CHECK (status IN ('PENDING_REVIEW', 'ACTIVE', 'SUSPENDED', 'BLOCKED')),
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX b2b_customers_status_idx ON b2b_customers (status, created_at DESC);

-- Every state change with who made it and why, written in the transaction that makes it.
CREATE TABLE b2b_customer_events (
  id          bigserial PRIMARY KEY,
  customer_id uuid NOT NULL REFERENCES b2b_customers (id),
  from_status text CHECK (from_status IN ('PENDING_REVIEW', 'ACTIVE', 'SUSPENDED', 'BLOCKED')),
  to_status   text NOT NULL CHECK (to_status IN ('PENDING_REVIEW', 'ACTIVE', 'SUSPENDED', 'BLOCKED')),
  reason      text NOT NULL CHECK (char_length(reason) BETWEEN 1 AND 500),
  actor       text NOT NULL CHECK (char_length(actor) BETWEEN 1 AND 200),
  at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX b2b_customer_events_customer_idx ON b2b_customer_events (customer_id, id);

-- API credentials: the key id is public, the secret is shown once and never stored; the
-- signing key is its one-way hash (src/b2b/request-signing.ts). A rotated key keeps working
-- until expires_at (the grace period); a revoked one stops at once.
CREATE TABLE api_credentials (
  key_id        text PRIMARY KEY CHECK (key_id ~ '^ak_[0-9a-f]{24}$'),
  customer_id   uuid NOT NULL REFERENCES b2b_customers (id),
  signing_key   bytea NOT NULL CHECK (octet_length(signing_key) = 32),
  scopes        text[] NOT NULL CHECK (cardinality(scopes) BETWEEN 1 AND 10),
  created_by    text NOT NULL CHECK (char_length(created_by) BETWEEN 1 AND 200),
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz,
  revoked_at    timestamptz,
  revoke_reason text CHECK (char_length(revoke_reason) <= 500),
  replaced_by   text REFERENCES api_credentials (key_id)
);
CREATE INDEX api_credentials_customer_idx ON api_credentials (customer_id, created_at DESC);

-- Each nonce once per key: the primary key decides a race between two requests carrying the
-- same one. Kept until its request could no longer be fresh, then pruned in bounded batches.
CREATE TABLE api_nonces (
  key_id     text NOT NULL,
  nonce      text NOT NULL CHECK (char_length(nonce) BETWEEN 16 AND 64),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (key_id, nonce)
);
CREATE INDEX api_nonces_expires_idx ON api_nonces (expires_at);

-- POS batch syncs: the batch id makes the whole call idempotent per customer. The row is
-- claimed (IN_PROGRESS) before the items run and holds the answer once DONE.
CREATE TABLE pos_batches (
  customer_id uuid NOT NULL REFERENCES b2b_customers (id),
  batch_id    text NOT NULL CHECK (batch_id ~ '^[A-Za-z0-9_.:-]{1,100}$'),
  body_hash   bytea NOT NULL CHECK (octet_length(body_hash) = 32),
  key_id      text NOT NULL,
  item_count  integer NOT NULL CHECK (item_count >= 1),
  status      text NOT NULL CHECK (status IN ('IN_PROGRESS', 'DONE')),
  result      jsonb,
  created_at  timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  PRIMARY KEY (customer_id, batch_id),
  CHECK ((status = 'DONE') = (result IS NOT NULL))
);
