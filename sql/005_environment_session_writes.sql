-- Creating a session writes its environment's row (db/environments.h, envdb_hold_for_session).
-- On a Galera cluster row locks stay on one node: a session created on one node and an archive
-- of its environment on another would both commit if the session only read the row under a
-- shared lock; two writes to the same row make one of them fail certification and retry.
ALTER TABLE environments ADD COLUMN session_writes BIGINT UNSIGNED NOT NULL DEFAULT 0;
