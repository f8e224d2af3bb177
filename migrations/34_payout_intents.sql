-- Payout intents (issue 32, section 3; docs/settlement.md "One payout per redemption"): before the
-- redemption's activity asks the gateway for a payout it records its intent here, one row per
-- (redemption, attempt), with what it is about to ask for. A lost answer is then recovered by
-- finding the transfer or bill payment at the gateway by its externalReference (the redemption
-- id), never by creating another. The gateway's validation approves one payout per intent: the
-- first it approves is claimed here (`claimed_payout_id`, in the same transaction as the
-- redemption's `gateway_transfer_id`) before the answer leaves; any other is refused and flagged.

CREATE TABLE payout_intents (
  redemption_id      uuid NOT NULL REFERENCES redemptions (id),
  attempt            integer NOT NULL CHECK (attempt >= 1),
  rail               text NOT NULL CHECK (rail IN ('pix', 'boleto')),
  amount_minor       bigint NOT NULL CHECK (amount_minor > 0),
  destination        text NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now(),
  claimed_payout_id  text UNIQUE,
  claimed_at         timestamptz,
  PRIMARY KEY (redemption_id, attempt),
  CHECK ((claimed_payout_id IS NULL) = (claimed_at IS NULL))
);
