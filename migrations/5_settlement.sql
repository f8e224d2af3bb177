-- Settlement through the payment gateway: redemptions (payouts of PLCs), charges (cash-in), and
-- the inbox of inbound webhooks. Each state transition is a guarded UPDATE; a final status never
-- moves backwards.

CREATE TABLE redemptions (
  id                  uuid PRIMARY KEY,
  token_id            uuid NOT NULL REFERENCES plcs (token_id),
  bearer_pubkey       text NOT NULL CHECK (bearer_pubkey ~ '^[0-9a-f]{64}$'),
  bearer_owner_id     text NOT NULL,
  issuer_owner_id     text NOT NULL,
  amount_minor        bigint NOT NULL CHECK (amount_minor > 0),
  fee_minor           bigint NOT NULL DEFAULT 0 CHECK (fee_minor >= 0 AND fee_minor <= amount_minor),
  currency            text NOT NULL CHECK (currency IN ('BRL', 'USD', 'EUR')),
  rail                text NOT NULL CHECK (rail IN ('pix')),
  destination         text NOT NULL CHECK (char_length(destination) BETWEEN 1 AND 140),
  destination_type    text NOT NULL CHECK (destination_type IN ('CPF', 'CNPJ', 'EMAIL', 'PHONE', 'EVP')),
  head_hash           text NOT NULL CHECK (head_hash ~ '^[0-9a-f]{64}$'),
  chain_length        integer NOT NULL,
  status              text NOT NULL CHECK (status IN ('PENDING_PAYMENT', 'SETTLED', 'FAILED')),
  gateway_transfer_id text UNIQUE,
  gateway_status      text,
  failure_reason      text CHECK (char_length(failure_reason) <= 500),
  request_tx_id       uuid NOT NULL,
  settle_tx_id        uuid,
  fail_tx_id          uuid,
  device_id           text NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  finished_at         timestamptz,
  CHECK (status <> 'SETTLED' OR settle_tx_id IS NOT NULL),
  CHECK (status <> 'FAILED' OR fail_tx_id IS NOT NULL)
);
-- The double-spend guard in the database: at most one redemption in flight or settled per PLC,
-- whichever fork of its chain a request presents.
CREATE UNIQUE INDEX redemptions_one_live_per_plc ON redemptions (token_id) WHERE status IN ('PENDING_PAYMENT', 'SETTLED');
CREATE INDEX redemptions_status ON redemptions (status, created_at DESC);

CREATE TABLE charges (
  id                  uuid PRIMARY KEY,
  owner_id            text NOT NULL,
  amount_minor        bigint NOT NULL CHECK (amount_minor > 0),
  currency            text NOT NULL CHECK (currency = 'BRL'),
  billing_type        text NOT NULL CHECK (billing_type IN ('PIX', 'BOLETO')),
  status              text NOT NULL CHECK (status IN ('PENDING', 'SETTLED', 'FAILED')),
  gateway_payment_id  text UNIQUE,
  gateway_customer_id text,
  gateway_status      text,
  due_date            date NOT NULL,
  pix_payload         text,
  pix_image_base64    text,
  boleto_line         text,
  failure_reason      text CHECK (char_length(failure_reason) <= 500),
  created_tx_id       uuid,
  settle_tx_id        uuid,
  fail_tx_id          uuid,
  device_id           text,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  finished_at         timestamptz,
  CHECK (status <> 'SETTLED' OR settle_tx_id IS NOT NULL),
  CHECK (status <> 'FAILED' OR fail_tx_id IS NOT NULL OR created_tx_id IS NULL)
);
CREATE INDEX charges_status ON charges (status, created_at DESC);
CREATE INDEX charges_owner ON charges (owner_id, created_at DESC);

CREATE TABLE webhook_inbox (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  provider      text NOT NULL CHECK (provider IN ('gateway', 'supabase')),
  endpoint      text NOT NULL CHECK (char_length(endpoint) <= 100),
  event_id      text NOT NULL CHECK (char_length(event_id) BETWEEN 1 AND 200),
  event_type    text CHECK (char_length(event_type) <= 100),
  -- The body exactly as received (bounded by the API's body limit), for audit and reprocessing.
  raw_body      text NOT NULL,
  status        text NOT NULL DEFAULT 'RECEIVED'
                  CHECK (status IN ('RECEIVED', 'PROCESSING', 'PROCESSED', 'IGNORED', 'DEAD')),
  attempts      integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  last_error    text CHECK (char_length(last_error) <= 1000),
  duplicates    integer NOT NULL DEFAULT 0 CHECK (duplicates >= 0),
  result        jsonb,
  received_at   timestamptz NOT NULL DEFAULT now(),
  processed_at  timestamptz,
  UNIQUE (provider, event_id)
);
CREATE INDEX webhook_inbox_status ON webhook_inbox (status, received_at);
CREATE INDEX webhook_inbox_type ON webhook_inbox (event_type, received_at DESC);
