-- Session events (docs/events.md): the append-only log that drives a session. Every client of a
-- session (the SDK's SessionToolRunner and EnvironmentWorker, a UI) reads it by list and stream;
-- the API appends the user's events, the runner the agent's and the status changes.
--
-- seq: the global order of appends, which each host's tailer follows to publish new events to
-- its stream subscribers. ord: the session's own order, what a list sorts by. An event gets the
-- session's next position (sessions.event_pos + 1) when it is processed, under the session's row
-- lock, so a session's order never changes once given; a queued user.message (processed_at NULL)
-- sorts after every processed event by ord = EVENTS_QUEUED_ORD + seq until a turn takes it.
-- ref_id: the tool use an answer (result, confirmation) or an agent.tool_result refers to.
CREATE TABLE session_events (
  seq BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id VARCHAR(40) NOT NULL,
  session_id VARCHAR(40) NOT NULL,
  ord BIGINT UNSIGNED NOT NULL,
  type VARCHAR(64) NOT NULL,
  ref_id VARCHAR(40) NULL,
  processed_at DATETIME(6) NULL,
  created_at DATETIME(6) NOT NULL,
  -- the event as sent or emitted, less id and processed_at: a JSON object starting {"type":
  body JSON NOT NULL,
  UNIQUE KEY session_events_id (id),
  UNIQUE KEY session_events_ord (session_id, ord),
  KEY session_events_ref (session_id, ref_id),
  KEY session_events_seq (session_id, seq),
  KEY session_events_created (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The session's runtime state, changed only in the transaction that appends the event
-- announcing it (db/events.c):
--   event_pos       the last position given to one of its events
--   turn_pending    1 while the session has a turn for a runner to run (a user.message started
--                   it, or the last answer a requires_action waited for arrived)
--   turn_due_at     when a runner may take it (later after a retryable model error)
--   blocking        the ids the last requires_action idle waited for (JSON array), else NULL
--   interrupt_at    a user.interrupt asked the running turn to stop
--   runner_owner, runner_attempt, runner_lease_expires_at: the runner holding the turn, its
--                   fencing token and lease (the runner's claim; docs/events.md)
ALTER TABLE sessions
  ADD COLUMN event_pos BIGINT UNSIGNED NOT NULL DEFAULT 0,
  ADD COLUMN turn_pending TINYINT NOT NULL DEFAULT 0,
  ADD COLUMN turn_due_at DATETIME(6) NULL,
  ADD COLUMN blocking JSON NULL,
  ADD COLUMN interrupt_at DATETIME(6) NULL,
  ADD COLUMN runner_owner VARCHAR(128) NULL,
  ADD COLUMN runner_attempt BIGINT UNSIGNED NOT NULL DEFAULT 0,
  ADD COLUMN runner_lease_expires_at DATETIME(6) NULL,
  ADD KEY sessions_turns (turn_pending, turn_due_at);
