-- Webhook operations and monitoring (docs/settlement.md, "Operators"): the gateway's webhook queues
-- as the monitor sees them, the queue of webhooks waiting for a backoff removal, a record of each
-- monitor run, and the deliveries our webhook endpoints refused for a bad token.

-- Every penalty the monitor finds, every backoff removal and its refusals, every configure.
-- `operation_key` makes a retried activity write its entry once.
CREATE TABLE webhook_penalty_log (
  id                        bigserial PRIMARY KEY,
  webhook_id                text NOT NULL CHECK (webhook_id ~ '^[A-Za-z0-9_-]{1,100}$'),
  action                    text NOT NULL CHECK (action IN
                              ('PENALIZED', 'INTERRUPTED', 'QUEUED', 'RECOVERED', 'REMOVED', 'REMOVAL_REFUSED', 'CONFIGURED')),
  penalized_requests_count  integer CHECK (penalized_requests_count >= 0),
  interrupted               boolean,
  -- REMOVED: until when no other removal of this webhook is allowed; REMOVAL_REFUSED: the gateway's own.
  cooldown_until            timestamptz,
  source                    text NOT NULL CHECK (source IN ('monitor', 'api', 'admin')),
  actor                     text CHECK (char_length(actor) <= 100),
  workflow_id               text CHECK (char_length(workflow_id) <= 300),
  operation_key             text UNIQUE CHECK (char_length(operation_key) <= 400),
  detail                    jsonb,
  created_at                timestamptz NOT NULL DEFAULT now(),
  CHECK (action NOT IN ('REMOVED', 'REMOVAL_REFUSED') OR cooldown_until IS NOT NULL)
);
CREATE INDEX webhook_penalty_log_webhook ON webhook_penalty_log (webhook_id, created_at DESC);
CREATE INDEX webhook_penalty_log_action ON webhook_penalty_log (action, created_at DESC);
CREATE INDEX webhook_penalty_log_created ON webhook_penalty_log (created_at DESC);

-- Webhooks the monitor found penalised or interrupted, waiting for a removal that their cooldown
-- allows; a removal deletes the row, a healthy queue at the next check deletes it too.
CREATE TABLE webhook_removal_queue (
  webhook_id                text PRIMARY KEY CHECK (webhook_id ~ '^[A-Za-z0-9_-]{1,100}$'),
  reason                    text NOT NULL CHECK (reason IN ('PENALIZED', 'INTERRUPTED')),
  penalized_requests_count  integer NOT NULL CHECK (penalized_requests_count >= 0),
  queued_at                 timestamptz NOT NULL DEFAULT now(),
  next_attempt_at           timestamptz NOT NULL DEFAULT now(),
  attempts                  integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  last_outcome              text CHECK (last_outcome IN ('REFUSED', 'FAILED')),
  last_error                text CHECK (char_length(last_error) <= 1000)
);

-- One row per monitor workflow run (scheduled or manual), written by its activities.
CREATE TABLE webhook_monitor_runs (
  workflow_id   text NOT NULL CHECK (char_length(workflow_id) <= 300),
  run_id        text NOT NULL CHECK (char_length(run_id) <= 100),
  mode          text NOT NULL CHECK (mode IN ('scheduled', 'check', 'process')),
  checked_at    timestamptz NOT NULL DEFAULT now(),
  webhooks      integer NOT NULL CHECK (webhooks >= 0),
  penalized     integer NOT NULL CHECK (penalized >= 0),
  interrupted   integer NOT NULL CHECK (interrupted >= 0),
  queued        integer NOT NULL CHECK (queued >= 0),
  removed       integer NOT NULL DEFAULT 0 CHECK (removed >= 0),
  refused       integer NOT NULL DEFAULT 0 CHECK (refused >= 0),
  failed        integer NOT NULL DEFAULT 0 CHECK (failed >= 0),
  error         text CHECK (char_length(error) <= 1000),
  PRIMARY KEY (workflow_id, run_id)
);
CREATE INDEX webhook_monitor_runs_checked ON webhook_monitor_runs (checked_at DESC);

-- Deliveries refused for a missing or wrong token, counted per provider and hour (one row per
-- hour spreads the writes of a flood over rows and keeps the count bounded).
CREATE TABLE webhook_auth_refusals (
  provider         text NOT NULL CHECK (provider IN ('gateway', 'supabase')),
  hour             timestamptz NOT NULL,
  refused          integer NOT NULL CHECK (refused > 0),
  last_refused_at  timestamptz NOT NULL,
  PRIMARY KEY (provider, hour)
);

-- The inbox, as operators read it: by endpoint (the webhook an event came through) and provider,
-- newest first; how many times an operator sent a dead event back through its workflow.
ALTER TABLE webhook_inbox ADD COLUMN reprocessed integer NOT NULL DEFAULT 0 CHECK (reprocessed >= 0);
CREATE INDEX webhook_inbox_endpoint ON webhook_inbox (endpoint, received_at DESC);
CREATE INDEX webhook_inbox_provider ON webhook_inbox (provider, received_at DESC);
CREATE INDEX webhook_inbox_received ON webhook_inbox (received_at DESC);
