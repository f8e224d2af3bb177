-- The operation log: one entry per operation that moves money or calls the gateway, with its
-- type, status, owner, reference, duration and error (docs/architecture.md, "The operation log").
-- Activities are logged by the worker's interceptor before their completion reaches Temporal, one
-- entry per activity execution (workflow, run, activity id), updated by each attempt; operations
-- a route runs itself write their entry before they start and finish it after.
CREATE TABLE operation_log (
  id              bigserial PRIMARY KEY,
  operation_type  text NOT NULL CHECK (operation_type ~ '^[A-Z][A-Z_]{0,49}$'),
  step            text NOT NULL CHECK (char_length(step) BETWEEN 1 AND 100),
  status          text NOT NULL CHECK (status IN ('STARTED', 'SUCCEEDED', 'FAILED', 'REFUSED')),
  owner_id        text CHECK (char_length(owner_id) <= 200),
  reference_id    text CHECK (char_length(reference_id) <= 300),
  workflow_id     text CHECK (char_length(workflow_id) <= 300),
  run_id          text CHECK (char_length(run_id) <= 100),
  activity_id     text CHECK (char_length(activity_id) <= 100),
  attempts        integer NOT NULL DEFAULT 1 CHECK (attempts >= 1),
  retryable       boolean NOT NULL DEFAULT false,
  duration_ms     integer CHECK (duration_ms >= 0),
  error_code      text CHECK (char_length(error_code) <= 100),
  error           text CHECK (char_length(error) <= 1000),
  started_at      timestamptz NOT NULL DEFAULT now(),
  finished_at     timestamptz,
  CHECK ((status = 'STARTED') = (finished_at IS NULL)),
  CHECK (status = 'SUCCEEDED' OR status = 'STARTED' OR error IS NOT NULL),
  CHECK ((workflow_id IS NULL) = (activity_id IS NULL))
);
CREATE UNIQUE INDEX operation_log_activity ON operation_log (workflow_id, run_id, activity_id) WHERE workflow_id IS NOT NULL;
CREATE INDEX operation_log_started ON operation_log (started_at DESC);
CREATE INDEX operation_log_type ON operation_log (operation_type, started_at DESC);
CREATE INDEX operation_log_status ON operation_log (status, started_at DESC);
CREATE INDEX operation_log_owner ON operation_log (owner_id, started_at DESC) WHERE owner_id IS NOT NULL;
