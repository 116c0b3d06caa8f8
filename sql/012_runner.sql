-- The runner (docs/runner.md): a built-in tool's start is recorded before it runs, in its own
-- transaction, so that a runner that dies while the tool runs is never followed by a second
-- run of it: the next runner finds the start without a result and tells the model the outcome
-- is unknown. Rows go with their session's events.
CREATE TABLE session_tool_runs (
  session_id VARCHAR(40) NOT NULL,
  tool_use_id VARCHAR(40) NOT NULL,
  runner_attempt BIGINT UNSIGNED NOT NULL,
  started_at DATETIME(6) NOT NULL,
  PRIMARY KEY (session_id, tool_use_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- When a session went idle waiting for its client (requires_action), for the runner's
-- tool_result_timeout_seconds.
ALTER TABLE sessions
  ADD COLUMN blocked_at DATETIME(6) NULL,
  ADD KEY sessions_blocked (blocked_at);
