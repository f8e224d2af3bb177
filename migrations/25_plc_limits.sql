-- Progressive PLC limits (issue 21, docs/limits-and-fees.md "Progressive limits"): increase
-- requests reviewed by an admin through the `limit-review-<request_id>` workflow, and the
-- overrides an approval grants to one device and owner until an end date.

CREATE TABLE plc_limit_requests (
  request_id                  uuid PRIMARY KEY,
  device_id                   text NOT NULL CHECK (char_length(device_id) BETWEEN 1 AND 128),
  -- The owner the device issued for when it asked (docs: the device's latest issuer).
  owner_id                    text NOT NULL,
  requested_max_amount_minor  bigint NOT NULL CHECK (requested_max_amount_minor > 0),
  requested_daily_limit_minor bigint NOT NULL CHECK (requested_daily_limit_minor > 0),
  -- The limits the device had when it asked, and the owner's tier then.
  current_max_amount_minor    bigint NOT NULL,
  current_daily_limit_minor   bigint NOT NULL,
  tier                        text NOT NULL REFERENCES reputation_tiers (tier),
  reason                      text NOT NULL CHECK (char_length(reason) BETWEEN 1 AND 1000),
  status                      text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'APPROVED', 'REJECTED', 'EXPIRED')),
  workflow_id                 text NOT NULL,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  review_deadline_at          timestamptz NOT NULL,
  decided_at                  timestamptz,
  decided_by                  text,
  decision_note               text CHECK (char_length(decision_note) <= 1000),
  granted_max_amount_minor    bigint,
  granted_daily_limit_minor   bigint,
  override_ends_at            timestamptz,
  CHECK ((status = 'PENDING') = (decided_at IS NULL)),
  CHECK (status <> 'APPROVED' OR (granted_max_amount_minor IS NOT NULL AND granted_daily_limit_minor IS NOT NULL AND override_ends_at IS NOT NULL))
);
-- One open request per device.
CREATE UNIQUE INDEX plc_limit_requests_one_open ON plc_limit_requests (device_id) WHERE status = 'PENDING';
CREATE INDEX plc_limit_requests_pending ON plc_limit_requests (created_at, request_id) WHERE status = 'PENDING';
CREATE INDEX plc_limit_requests_by_device ON plc_limit_requests (device_id, created_at DESC);

-- The override of one device and owner: the latest approval replaces the previous one.
CREATE TABLE plc_limit_overrides (
  device_id         text NOT NULL,
  owner_id          text NOT NULL,
  request_id        uuid NOT NULL REFERENCES plc_limit_requests (request_id),
  max_amount_minor  bigint NOT NULL CHECK (max_amount_minor > 0),
  daily_limit_minor bigint NOT NULL CHECK (daily_limit_minor > 0),
  starts_at         timestamptz NOT NULL DEFAULT now(),
  ends_at           timestamptz NOT NULL,
  PRIMARY KEY (device_id, owner_id)
);

-- A device's owners: the issuers of the PLCs it registered, latest first.
CREATE INDEX plcs_by_device ON plcs (device_id, registered_at DESC);
