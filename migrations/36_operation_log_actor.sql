-- Operators' actions in the operation log (issue 40, docs/operations-console.md "The operation
-- log of an operator's action"): an admin's decision (a limit increase request, a business
-- customer's state, a key lifted from the blocklist, an administrator created or changed) is an
-- entry like a money-moving operation, with who made it. `actor` is the admin's username (or
-- `cli:<user>` for `npm run admin`); null for the worker's entries. The console shows the entry of
-- the action it just ran, found by its reference.
ALTER TABLE operation_log ADD COLUMN actor text CHECK (char_length(actor) BETWEEN 1 AND 100);
CREATE INDEX operation_log_reference ON operation_log (reference_id, started_at DESC) WHERE reference_id IS NOT NULL;
