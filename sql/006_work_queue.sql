-- Self-hosted work queue (docs/work-queue.md): one work item per session of a self_hosted
-- environment, written in the session-create transaction; environment keys (the credential a
-- customer's workers poll with), the sessions tokens handed out in a poll's `secret`, and the
-- worker ids seen polling (for stats). Everything of an environment goes with it on delete.

CREATE TABLE work_items (
  id VARCHAR(40) NOT NULL PRIMARY KEY,
  workspace_id VARCHAR(40) NOT NULL,
  environment_id VARCHAR(40) NOT NULL,
  session_id VARCHAR(40) NOT NULL,
  -- queued, starting, active, stopping, stopped
  state VARCHAR(16) NOT NULL,
  metadata JSON NOT NULL,
  -- last delivery by a poll (NULL: never delivered, or given back by an expired lease)
  delivered_at DATETIME(6) NULL,
  deliveries INT UNSIGNED NOT NULL DEFAULT 0,
  worker_id VARCHAR(128) NULL,
  acknowledged_at DATETIME(6) NULL,
  started_at DATETIME(6) NULL,
  latest_heartbeat_at DATETIME(6) NULL,
  lease_ttl_seconds INT UNSIGNED NOT NULL DEFAULT 60,
  lease_expires_at DATETIME(6) NULL,
  stop_requested_at DATETIME(6) NULL,
  stopped_at DATETIME(6) NULL,
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  KEY work_queue (environment_id, state, created_at, id),
  KEY work_list (environment_id, created_at, id),
  KEY work_session (session_id),
  CONSTRAINT work_items_environment FOREIGN KEY (environment_id) REFERENCES environments (id)
    ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Sessions tokens: SHA-256 only, one live token per item (a re-delivery revokes the earlier).
CREATE TABLE work_tokens (
  token_hash BINARY(32) NOT NULL PRIMARY KEY,
  work_id VARCHAR(40) NOT NULL,
  created_at DATETIME(6) NOT NULL,
  revoked_at DATETIME(6) NULL,
  KEY work_tokens_item (work_id, revoked_at),
  CONSTRAINT work_tokens_item FOREIGN KEY (work_id) REFERENCES work_items (id)
    ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Environment keys: open only their environment's work routes. SHA-256 only.
CREATE TABLE environment_keys (
  id VARCHAR(40) NOT NULL PRIMARY KEY,
  environment_id VARCHAR(40) NOT NULL,
  key_hash BINARY(32) NOT NULL,
  created_at DATETIME(6) NOT NULL DEFAULT UTC_TIMESTAMP(6),
  revoked_at DATETIME(6) NULL,
  UNIQUE KEY environment_keys_hash (key_hash),
  CONSTRAINT environment_keys_environment FOREIGN KEY (environment_id)
    REFERENCES environments (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- anthropic-worker-id values seen polling, for stats.workers_polling (last 30 s).
CREATE TABLE work_pollers (
  environment_id VARCHAR(40) NOT NULL,
  worker_id VARCHAR(128) NOT NULL,
  last_seen_at DATETIME(6) NOT NULL,
  PRIMARY KEY (environment_id, worker_id),
  KEY work_pollers_seen (environment_id, last_seen_at),
  CONSTRAINT work_pollers_environment FOREIGN KEY (environment_id) REFERENCES environments (id)
    ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
