-- Issue 32 (docs/plc.md, "The registered commitment binds every path"; docs/protocol.md section
-- 8a): the proofs of an issuer's cheat the server keeps, the flags they raise and the blocks they
-- make, and the operator's compensation of a bearer booked against that evidence.

ALTER TABLE risk_flags
  DROP CONSTRAINT risk_flags_flag_type_check,
  ADD CONSTRAINT risk_flags_flag_type_check
    CHECK (flag_type IN ('DOUBLE_SPEND_FORK', 'DOUBLE_REDEMPTION_ATTEMPT', 'OVERDUE_EXPIRY', 'WEBHOOK_CONTRADICTS_GATEWAY',
                         'GATEWAY_AUDIT_MISMATCH', 'ISSUER_DOUBLE_ISSUE', 'CANCEL_AFTER_TRANSFER'));

-- A key is blocked for a proven fork, for a proven double issue (two commitments under one token
-- id, both signed by the issuer), or for a proven cancel after a transfer (the issuer signed the
-- PLC's first hop, then cancelled it online).
ALTER TABLE key_blocks
  DROP CONSTRAINT key_blocks_reason_check,
  ADD CONSTRAINT key_blocks_reason_check CHECK (reason IN ('DOUBLE_SPEND_FORK', 'ISSUER_DOUBLE_ISSUE', 'CANCEL_AFTER_TRANSFER'));

CREATE TABLE plc_evidence (
  id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  kind               text NOT NULL CHECK (kind IN ('ISSUER_DOUBLE_ISSUE', 'CANCEL_AFTER_TRANSFER')),
  token_id           uuid NOT NULL REFERENCES plcs (token_id),
  -- The issuer whose signatures prove the cheat.
  culprit_pubkey     text NOT NULL CHECK (culprit_pubkey ~ '^[0-9a-f]{64}$'),
  -- One incident, one row: the flag's dedupe key names it (src/plc/commitment-binding.ts).
  risk_flag_id       uuid NOT NULL UNIQUE REFERENCES risk_flags (id),
  -- The proof, checkable offline: both canonical commitments and signatures (double issue), or
  -- the presented chain's records in the protocol's JSON form (cancel after transfer).
  evidence           jsonb NOT NULL,
  -- Cancel after transfer: who holds the PLC by the longest chain shown (the bearer an operator
  -- may compensate), with the registered amount.
  bearer_pubkey      text CHECK (bearer_pubkey ~ '^[0-9a-f]{64}$'),
  amount_minor       bigint NOT NULL CHECK (amount_minor > 0),
  currency           text NOT NULL CHECK (currency IN ('BRL', 'USD', 'EUR')),
  route              text NOT NULL CHECK (char_length(route) BETWEEN 1 AND 64),
  device_id          text NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  -- The operator's compensation (reconcile tool compensate-cancelled-bearers), booked once.
  compensation_tx_id uuid REFERENCES ledger_transactions (id),
  compensated_minor  bigint CHECK (compensated_minor > 0),
  CHECK (kind <> 'CANCEL_AFTER_TRANSFER' OR bearer_pubkey IS NOT NULL),
  CHECK ((compensation_tx_id IS NULL) = (compensated_minor IS NULL)),
  CHECK (kind = 'CANCEL_AFTER_TRANSFER' OR compensation_tx_id IS NULL)
);
CREATE INDEX plc_evidence_token ON plc_evidence (token_id);
CREATE INDEX plc_evidence_uncompensated ON plc_evidence (kind, id) WHERE compensation_tx_id IS NULL;

-- `ledger verify` (ledger_violations(), migration 12) checks the chains and redemptions too.
CREATE OR REPLACE FUNCTION ledger_violations(p_limit integer DEFAULT 100)
RETURNS TABLE (kind text, subject text, detail text) LANGUAGE sql STABLE AS $$
  (SELECT 'unbalanced_transaction', t.id::text, string_agg(s.currency || '=' || s.total::text, ', ')
     FROM ledger_transactions t
     JOIN (SELECT transaction_id, currency, sum(amount_minor) AS total FROM ledger_entries
            GROUP BY transaction_id, currency HAVING sum(amount_minor) <> 0) s ON s.transaction_id = t.id
    GROUP BY t.id)
  UNION ALL
  (SELECT 'transaction_without_entries', t.id::text, 'no movement'
     FROM ledger_transactions t
    WHERE NOT EXISTS (SELECT FROM ledger_movements m WHERE m.transaction_id = t.id))
  UNION ALL
  (SELECT 'snapshot_mismatch', a.owner_id || '/' || coalesce(b.bucket, e.bucket) || '/' || coalesce(b.currency, e.currency),
          format('snapshot %s, entries %s', coalesce(b.amount_minor, 0), coalesce(e.total, 0))
            || CASE WHEN coalesce(b.unfolded_minor, 0) <> 0 THEN format(' (of the snapshot, %s in unfolded credits)', b.unfolded_minor) ELSE '' END
     FROM (SELECT account_id, bucket, currency, sum(amount_minor) AS total FROM ledger_entries
            GROUP BY account_id, bucket, currency) e
     FULL JOIN ledger_bucket_balances b USING (account_id, bucket, currency)
     JOIN ledger_accounts a ON a.id = coalesce(b.account_id, e.account_id)
    WHERE coalesce(b.amount_minor, 0) <> coalesce(e.total, 0))
  UNION ALL
  (SELECT 'negative_user_bucket', a.owner_id || '/' || b.bucket || '/' || b.currency, b.amount_minor::text
     FROM ledger_balances b JOIN ledger_accounts a ON a.id = b.account_id
    WHERE a.kind = 'user' AND b.amount_minor < 0)
  UNION ALL
  (SELECT 'entry_without_account', m.id::text, format('movement %s: account %s does not exist', m.id, x.account_id)
     FROM ledger_movements m CROSS JOIN LATERAL (VALUES (m.debit_account), (m.credit_account)) AS x(account_id)
    WHERE NOT EXISTS (SELECT FROM ledger_accounts a WHERE a.id = x.account_id))
  UNION ALL
  (SELECT 'entry_without_transaction', m.id::text, format('movement %s: transaction %s does not exist', m.id, m.transaction_id)
     FROM ledger_movements m WHERE NOT EXISTS (SELECT FROM ledger_transactions t WHERE t.id = m.transaction_id))
  UNION ALL
  (SELECT 'credit_without_account', c.id::text, format('unfolded credit %s: account %s does not exist', c.id, c.account_id)
     FROM ledger_balance_credits c WHERE NOT EXISTS (SELECT FROM ledger_accounts a WHERE a.id = c.account_id))
  UNION ALL
  -- Issue 32: every registered chain links to its registered commitment, record by record, and
  -- the PLC's head is its chain's last record.
  (SELECT 'chain_unlinked', t.token_id::text || '/' || t.position::text,
          format('record %s links to %s, not to %s', t.record_hash, t.prev_hash,
                 CASE WHEN t.position = 0 THEN 'the registered commitment ' || p.commitment_hash ELSE 'record ' || coalesce(prev.record_hash, '(missing)') END)
     FROM plc_transfers t
     JOIN plcs p ON p.token_id = t.token_id
     LEFT JOIN plc_transfers prev ON prev.token_id = t.token_id AND prev.position = t.position - 1
    WHERE t.prev_hash IS DISTINCT FROM CASE WHEN t.position = 0 THEN p.commitment_hash ELSE prev.record_hash END)
  UNION ALL
  (SELECT 'chain_head_mismatch', p.token_id::text,
          format('chain_length %s head %s bearer %s; the chain has %s records, its last %s to %s',
                 p.chain_length, p.head_hash, p.bearer_pubkey, coalesce(c.n, 0), coalesce(last.record_hash, p.commitment_hash),
                 coalesce(last.recipient_pubkey, p.issuer_pubkey))
     FROM plcs p
     LEFT JOIN LATERAL (SELECT count(*) AS n FROM plc_transfers t WHERE t.token_id = p.token_id) c ON true
     LEFT JOIN plc_transfers last ON last.token_id = p.token_id AND last.position = p.chain_length - 1
    WHERE coalesce(c.n, 0) <> p.chain_length
       OR p.head_hash <> coalesce(last.record_hash, p.commitment_hash)
       OR p.bearer_pubkey <> coalesce(last.recipient_pubkey, p.issuer_pubkey))
  UNION ALL
  -- A redemption pays the registered amount, in its currency, to a key that held the PLC at the
  -- head it redeemed (a recipient of the registered chain), less a fee no larger than the amount.
  (SELECT 'redemption_not_registered', r.id::text,
          format('redemption of %s %s to %s at head %s; the PLC registers %s %s', r.amount_minor, r.currency, r.bearer_pubkey, r.head_hash,
                 p.amount_minor, p.currency)
     FROM redemptions r
     JOIN plcs p ON p.token_id = r.token_id
    WHERE r.amount_minor <> p.amount_minor OR r.currency <> p.currency OR r.fee_minor < 0 OR r.fee_minor > r.amount_minor
       OR NOT EXISTS (SELECT FROM plc_transfers t WHERE t.token_id = r.token_id AND t.record_hash = r.head_hash
                                                    AND t.recipient_pubkey = r.bearer_pubkey AND t.position = r.chain_length - 1))
  LIMIT p_limit
$$;

-- A double issue or a cancel after transfer is the issuer's conduct: it counts against its owner
-- like a fork (docs/limits-and-fees.md, RISK_FLAG).
DROP TRIGGER risk_flags_reputation ON risk_flags;
CREATE TRIGGER risk_flags_reputation AFTER INSERT ON risk_flags FOR EACH ROW
  WHEN (char_length(NEW.subject_pubkey) BETWEEN 1 AND 128
        AND NEW.flag_type IN ('DOUBLE_SPEND_FORK', 'DOUBLE_REDEMPTION_ATTEMPT', 'ISSUER_DOUBLE_ISSUE', 'CANCEL_AFTER_TRANSFER'))
  EXECUTE FUNCTION reputation_on_risk_flag();
