-- Boleto payouts (issue 19, docs/protocol.md 9.2, docs/settlement.md "Boleto payouts"): a
-- redemption is paid over Pix (a transfer to the bearer's Pix key) or by paying the boleto whose
-- digitable line the bearer signed (a bill payment at the gateway). The line is kept in
-- `destination` (digits only, as signed), its kind in `destination_type`; the gateway's payout id,
-- a transfer's or a bill payment's, in `gateway_transfer_id`.

ALTER TABLE redemptions
  DROP CONSTRAINT redemptions_rail_check,
  ADD CONSTRAINT redemptions_rail_check CHECK (rail IN ('pix', 'boleto')),
  DROP CONSTRAINT redemptions_destination_type_check,
  ADD CONSTRAINT redemptions_destination_type_check
    CHECK (destination_type IN ('CPF', 'CNPJ', 'EMAIL', 'PHONE', 'EVP', 'BANK_SLIP', 'COLLECTION')),
  ADD CONSTRAINT redemptions_rail_destination_check
    CHECK ((rail = 'boleto') = (destination_type IN ('BANK_SLIP', 'COLLECTION'))
           AND (rail <> 'boleto' OR destination ~ '^[0-9]{47,48}$'));
