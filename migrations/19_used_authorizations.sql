-- Every signed authorisation the service accepts (docs/protocol.md section 9.4), by its hash:
-- SHA-256 of the signer's public key followed by the exact signed message bytes. An authorisation
-- is accepted once: the row is inserted in the same transaction as what it authorises (a
-- redemption's opening), or claimed before it (a cancel, released again if the cancel is refused),
-- so a second presentation finds it whatever its Idempotency-Key, and two presented at the same
-- moment through two API instances cannot both insert it. Rows are kept: they are the audit trail
-- of who authorised what, one per redemption or cancel.
CREATE TABLE used_authorizations (
  authorization_hash text PRIMARY KEY CHECK (char_length(authorization_hash) = 64 AND authorization_hash !~ '[^0-9a-f]'),
  kind               text NOT NULL CHECK (kind IN ('cancel', 'redeem', 'backup', 'recover')),
  signer_pubkey      text NOT NULL CHECK (char_length(signer_pubkey) = 64 AND signer_pubkey !~ '[^0-9a-f]'),
  token_id           uuid,
  -- What it authorised: the redemption id, or the PLC's token id for a cancel.
  reference_id       text NOT NULL,
  signed_at_ms       bigint NOT NULL CHECK (signed_at_ms >= 0),
  accepted_at        timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX used_authorizations_token_id ON used_authorizations (token_id);
