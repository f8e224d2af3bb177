-- Hex and digit CHECKs without bounded regular expressions.
--
-- A perf profile of the transfer append (the statement of db/plcs.ts `appendTransfersBatch`, one
-- first hop per PLC, five PLCs per statement) put 27% of the backend's CPU in `textregexeq`: the
-- CHECKs of migrations 4, 5 and 6 written as `x ~ '^[0-9a-f]{64}$'`. PostgreSQL's regex engine
-- expands a bounded repetition into one state per repetition, and an UPDATE evaluates every CHECK
-- of the table, so a hop ran twelve of them (six on its plcs row, six on its plc_transfers row).
-- Measured on 300,000 64-digit values: about 6 us per `~ '^[0-9a-f]{64}$'` and 0.5 us per
-- `char_length(x) = 64 AND x !~ '[^0-9a-f]'` (a negated class needs no counting).
--
-- Each CHECK below accepts exactly the values its predecessor accepted: a given length and no
-- character outside the class (a NULL passes both, as before). Each keeps its name. Each table
-- is altered by one statement, so its rows are scanned once to validate the new CHECKs.

ALTER TABLE plcs
  DROP CONSTRAINT plcs_issuer_pubkey_check,
  ADD CONSTRAINT plcs_issuer_pubkey_check CHECK (char_length(issuer_pubkey) = 64 AND issuer_pubkey !~ '[^0-9a-f]'),
  DROP CONSTRAINT plcs_nonce_check,
  ADD CONSTRAINT plcs_nonce_check CHECK (char_length(nonce) = 32 AND nonce !~ '[^0-9a-f]'),
  DROP CONSTRAINT plcs_commitment_hash_check,
  ADD CONSTRAINT plcs_commitment_hash_check CHECK (char_length(commitment_hash) = 64 AND commitment_hash !~ '[^0-9a-f]'),
  DROP CONSTRAINT plcs_signature_check,
  ADD CONSTRAINT plcs_signature_check CHECK (char_length(signature) = 128 AND signature !~ '[^0-9a-f]'),
  DROP CONSTRAINT plcs_head_hash_check,
  ADD CONSTRAINT plcs_head_hash_check CHECK (char_length(head_hash) = 64 AND head_hash !~ '[^0-9a-f]'),
  DROP CONSTRAINT plcs_bearer_pubkey_check,
  ADD CONSTRAINT plcs_bearer_pubkey_check CHECK (char_length(bearer_pubkey) = 64 AND bearer_pubkey !~ '[^0-9a-f]');

ALTER TABLE plc_transfers
  DROP CONSTRAINT plc_transfers_sender_pubkey_check,
  ADD CONSTRAINT plc_transfers_sender_pubkey_check CHECK (char_length(sender_pubkey) = 64 AND sender_pubkey !~ '[^0-9a-f]'),
  DROP CONSTRAINT plc_transfers_recipient_pubkey_check,
  ADD CONSTRAINT plc_transfers_recipient_pubkey_check CHECK (char_length(recipient_pubkey) = 64 AND recipient_pubkey !~ '[^0-9a-f]'),
  DROP CONSTRAINT plc_transfers_nonce_check,
  ADD CONSTRAINT plc_transfers_nonce_check CHECK (char_length(nonce) = 32 AND nonce !~ '[^0-9a-f]'),
  DROP CONSTRAINT plc_transfers_prev_hash_check,
  ADD CONSTRAINT plc_transfers_prev_hash_check CHECK (char_length(prev_hash) = 64 AND prev_hash !~ '[^0-9a-f]'),
  DROP CONSTRAINT plc_transfers_signature_check,
  ADD CONSTRAINT plc_transfers_signature_check CHECK (char_length(signature) = 128 AND signature !~ '[^0-9a-f]'),
  DROP CONSTRAINT plc_transfers_record_hash_check,
  ADD CONSTRAINT plc_transfers_record_hash_check CHECK (char_length(record_hash) = 64 AND record_hash !~ '[^0-9a-f]');

ALTER TABLE redemptions
  DROP CONSTRAINT redemptions_bearer_pubkey_check,
  ADD CONSTRAINT redemptions_bearer_pubkey_check CHECK (char_length(bearer_pubkey) = 64 AND bearer_pubkey !~ '[^0-9a-f]'),
  DROP CONSTRAINT redemptions_head_hash_check,
  ADD CONSTRAINT redemptions_head_hash_check CHECK (char_length(head_hash) = 64 AND head_hash !~ '[^0-9a-f]');

ALTER TABLE charges
  DROP CONSTRAINT charges_request_hash_check,
  ADD CONSTRAINT charges_request_hash_check CHECK (char_length(request_hash) = 64 AND request_hash !~ '[^0-9a-f]'),
  DROP CONSTRAINT charges_payer_cpf_cnpj_check,
  ADD CONSTRAINT charges_payer_cpf_cnpj_check CHECK (char_length(payer_cpf_cnpj) IN (11, 14) AND payer_cpf_cnpj !~ '[^0-9]'),
  DROP CONSTRAINT charges_boleto_bar_code_check,
  ADD CONSTRAINT charges_boleto_bar_code_check CHECK (char_length(boleto_bar_code) = 44 AND boleto_bar_code !~ '[^0-9]');
