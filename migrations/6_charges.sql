-- Charges (cash-in, docs/charges.md): what the charge workflow needs beyond 5_settlement.sql. The
-- row is the source of truth a retried or resumed workflow rebuilds the gateway charge from, so it
-- keeps the request (its hash, for "same Idempotency-Key, another body"), the payer the gateway
-- customer is created for, and both halves of a Boleto's payment instructions.

ALTER TABLE charges
  ADD COLUMN request_hash    text CHECK (request_hash ~ '^[0-9a-f]{64}$'),
  ADD COLUMN payer_name      text CHECK (char_length(payer_name) BETWEEN 1 AND 200),
  ADD COLUMN payer_cpf_cnpj  text CHECK (payer_cpf_cnpj ~ '^([0-9]{11}|[0-9]{14})$'),
  ADD COLUMN payer_email     text CHECK (char_length(payer_email) <= 254),
  ADD COLUMN description     text CHECK (char_length(description) <= 500),
  ADD COLUMN boleto_bar_code text CHECK (boleto_bar_code ~ '^[0-9]{44}$');
