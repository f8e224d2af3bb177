-- The blocklist of keys proven to cheat (docs/protocol.md section 18, docs/plc.md "Blocked keys").
--
-- A key whose fork was proven (section 8: two successors of one PLC state, both signed by it) is
-- blocked in the same transaction that raises the fork's DOUBLE_SPEND_FORK risk flag
-- (services/fork-check.ts): one row here per block, the flag as its evidence. From then on the
-- key is refused as the issuer of a new PLC, as the signer of a new hop and as the bearer of a
-- new redemption, by the triggers below, inside the transaction that would book or register it,
-- whichever code path gets there. An admin lifts a block with a reason; the row keeps who, when
-- and why. A later, different fork by the same key blocks it again (a new row); the same fork
-- shown again does not (one row per key and flag).
--
-- The published list (GET /api/v1/blocklist, signed) is versioned: blocklist_state.version grows
-- by one at every block and every lift, in the same transaction, under that row's lock, so every
-- change of the list is one version and a version's keys never change afterwards.
CREATE TABLE blocklist_state (
  singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  version      bigint NOT NULL CHECK (version >= 1),
  -- When this version was made, to the millisecond: it is signed with the list.
  published_at timestamptz NOT NULL CHECK (published_at = date_trunc('milliseconds', published_at))
);
INSERT INTO blocklist_state (version, published_at) VALUES (1, date_trunc('milliseconds', now()));

CREATE TABLE key_blocks (
  id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  pubkey             text NOT NULL CHECK (pubkey ~ '^[0-9a-f]{64}$'),
  -- The ledger owner of the key (today the key itself, docs/plc.md), whose reputation drops.
  owner_id           text NOT NULL CHECK (char_length(owner_id) BETWEEN 1 AND 128),
  reason             text NOT NULL CHECK (reason IN ('DOUBLE_SPEND_FORK')),
  risk_flag_id       uuid NOT NULL REFERENCES risk_flags (id),
  token_id           uuid,
  -- Where the fork was shown: transfer, redeem, settlements.
  route              text NOT NULL CHECK (char_length(route) BETWEEN 1 AND 64),
  blocked_at         timestamptz NOT NULL DEFAULT now(),
  blocked_in_version bigint NOT NULL CHECK (blocked_in_version >= 2),
  lifted_at          timestamptz,
  lifted_by          text CHECK (char_length(lifted_by) BETWEEN 1 AND 128),
  lift_reason        text CHECK (char_length(lift_reason) BETWEEN 1 AND 1000),
  lifted_in_version  bigint CHECK (lifted_in_version > blocked_in_version),
  CHECK ((lifted_at IS NULL) = (lifted_by IS NULL)
     AND (lifted_at IS NULL) = (lift_reason IS NULL)
     AND (lifted_at IS NULL) = (lifted_in_version IS NULL)),
  UNIQUE (pubkey, risk_flag_id)
);
-- At most one block in force per key; the triggers' lookup.
CREATE UNIQUE INDEX key_blocks_active ON key_blocks (pubkey) WHERE lifted_at IS NULL;
CREATE INDEX key_blocks_recent ON key_blocks (blocked_at DESC, id);

-- The refusal: SQLSTATE 23K01 (class 23, integrity: one item's fault, so a group commit that
-- carries it splits its batch down to that item, db/group-commit.ts), DETAIL a JSON object with
-- the key, its role and the block's id. db/blocklist.ts maps it to the domain error KEY_BLOCKED.
CREATE FUNCTION refuse_blocked_key(p_pubkey text, p_role text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_block uuid;
BEGIN
  SELECT b.id INTO v_block FROM key_blocks b WHERE b.pubkey = p_pubkey AND b.lifted_at IS NULL;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = '23K01', MESSAGE = 'KEY_BLOCKED',
      DETAIL = jsonb_build_object('pubkey', p_pubkey, 'role', p_role, 'block_id', v_block)::text;
  END IF;
END;
$$;

CREATE FUNCTION plcs_refuse_blocked_issuer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM refuse_blocked_key(NEW.issuer_pubkey, 'issuer');
  RETURN NEW;
END;
$$;
CREATE TRIGGER plcs_refuse_blocked_issuer BEFORE INSERT ON plcs
  FOR EACH ROW EXECUTE FUNCTION plcs_refuse_blocked_issuer();

CREATE FUNCTION plc_transfers_refuse_blocked_signer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM refuse_blocked_key(NEW.sender_pubkey, 'signer');
  RETURN NEW;
END;
$$;
CREATE TRIGGER plc_transfers_refuse_blocked_signer BEFORE INSERT ON plc_transfers
  FOR EACH ROW EXECUTE FUNCTION plc_transfers_refuse_blocked_signer();

CREATE FUNCTION redemptions_refuse_blocked_bearer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM refuse_blocked_key(NEW.bearer_pubkey, 'bearer');
  RETURN NEW;
END;
$$;
CREATE TRIGGER redemptions_refuse_blocked_bearer BEFORE INSERT ON redemptions
  FOR EACH ROW EXECUTE FUNCTION redemptions_refuse_blocked_bearer();
