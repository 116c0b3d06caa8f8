-- Sessions with their captured environment configuration and agent snapshot, provisioning
-- intents (the reconciler's durable work), and the sandbox binding written when provisioning
-- completes. 001 created a placeholder sessions table that no code path ever wrote to, so it is
-- replaced rather than altered.

DROP TABLE sessions;

CREATE TABLE sessions (
  id VARCHAR(40) NOT NULL PRIMARY KEY,
  workspace_id VARCHAR(40) NOT NULL,
  -- NULL once the session is deleted and only awaits its sandbox's teardown: the captured
  -- configuration below is all it needs, and the environment may then be deleted
  environment_id VARCHAR(40) NULL,
  environment_revision BIGINT UNSIGNED NOT NULL,
  environment_config JSON NOT NULL,
  agent_id VARCHAR(40) NOT NULL,
  agent_version BIGINT NOT NULL,
  agent_snapshot JSON NOT NULL,
  mcp_servers JSON NULL,
  status VARCHAR(16) NOT NULL DEFAULT 'idle',
  title VARCHAR(500) NULL,
  metadata JSON NOT NULL,
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  archived_at DATETIME(6) NULL,
  deleted_at DATETIME(6) NULL,
  KEY sessions_environment (environment_id),
  KEY sessions_list (workspace_id, created_at, id),
  KEY sessions_agent (workspace_id, agent_id, created_at, id),
  CONSTRAINT sessions_environment FOREIGN KEY (environment_id) REFERENCES environments (id),
  CONSTRAINT sessions_workspace FOREIGN KEY (workspace_id) REFERENCES workspaces (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE provisioning_intents (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  session_id VARCHAR(40) NOT NULL,
  workspace_id VARCHAR(40) NOT NULL,
  kind VARCHAR(16) NOT NULL,
  state VARCHAR(16) NOT NULL,
  spec JSON NOT NULL,
  steps_done JSON NOT NULL,
  attempts INT UNSIGNED NOT NULL DEFAULT 0,
  next_attempt_at DATETIME(6) NOT NULL,
  lease_owner VARCHAR(128) NULL,
  lease_expires_at DATETIME(6) NULL,
  last_error TEXT NULL,
  sandbox_id VARCHAR(255) NULL,
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  UNIQUE KEY intents_session_kind (session_id, kind),
  KEY intents_due (state, next_attempt_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE session_sandboxes (
  session_id VARCHAR(40) NOT NULL PRIMARY KEY,
  backend VARCHAR(32) NOT NULL,
  sandbox_id VARCHAR(255) NOT NULL,
  egress_policy JSON NULL,
  created_at DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
