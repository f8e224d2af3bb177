-- Money moves on the gateway's word, never on a message's (issue 17, docs/settlement.md
-- "Webhooks in"). Before a webhook event moves a redemption or a charge, its processing reads the
-- transfer or payment back from the gateway and acts on what the gateway says. An event the
-- gateway contradicts (an authenticated TRANSFER_FAILED about a transfer the gateway holds DONE, a
-- PAYMENT_RECEIVED about a charge it holds PENDING) never moves money: it is stored CONTRADICTED
-- in the inbox, with the gateway's answer in `result`, and raises a risk flag of its own
-- (WEBHOOK_CONTRADICTS_GATEWAY: a leaked webhook token or a misbehaving gateway, either of which
-- a person must look at). Each CHECK keeps its name and accepts every value it accepted before.

ALTER TABLE risk_flags
  DROP CONSTRAINT risk_flags_flag_type_check,
  ADD CONSTRAINT risk_flags_flag_type_check
    CHECK (flag_type IN ('DOUBLE_SPEND_FORK', 'DOUBLE_REDEMPTION_ATTEMPT', 'OVERDUE_EXPIRY', 'WEBHOOK_CONTRADICTS_GATEWAY'));

ALTER TABLE webhook_inbox
  DROP CONSTRAINT webhook_inbox_status_check,
  ADD CONSTRAINT webhook_inbox_status_check
    CHECK (status IN ('RECEIVED', 'PROCESSING', 'PROCESSED', 'IGNORED', 'DEAD', 'CONTRADICTED'));
