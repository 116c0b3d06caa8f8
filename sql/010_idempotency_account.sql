-- Idempotency keys belong to the account that used them, not only to its workspace: another
-- account of the workspace replaying a key and body would otherwise receive the first account's
-- stored answer (an object it may not see), and a 422 against a replay would tell it whether the
-- key had been used. Rows stored before this migration keep account_id '' and are never
-- replayed again; they expire within IDEM_TTL_S (24 hours) and the reconciler removes them.
ALTER TABLE idempotency_keys
  ADD COLUMN account_id VARCHAR(255) NOT NULL DEFAULT '' AFTER workspace_id,
  DROP PRIMARY KEY,
  ADD PRIMARY KEY (workspace_id, account_id, idem_key);
