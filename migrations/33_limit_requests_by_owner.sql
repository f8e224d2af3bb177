-- Limit increase requests keyed on who asks (issue 34, docs/limits-and-fees.md "Increase
-- requests"): a request is signed by the key of the owner it is for, and one open request is kept
-- per device AND owner, so another owner's pending request on a shared device can never lock an
-- owner out (a stranger cannot file at all: the signature is the owner's). The signed request is
-- an authorisation accepted once (used_authorizations, docs/protocol.md section 9.4).
DROP INDEX plc_limit_requests_one_open;
CREATE UNIQUE INDEX plc_limit_requests_one_open ON plc_limit_requests (device_id, owner_id) WHERE status = 'PENDING';

ALTER TABLE used_authorizations DROP CONSTRAINT used_authorizations_kind_check;
ALTER TABLE used_authorizations ADD CONSTRAINT used_authorizations_kind_check
  CHECK (kind IN ('cancel', 'redeem', 'backup', 'recover', 'limit-increase'));
