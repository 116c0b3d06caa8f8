-- Workspaces, API keys, deployment secrets, environments, and the sessions table that
-- environments are referenced by (its session columns arrive with the sessions API).

CREATE TABLE workspaces (
  id VARCHAR(40) NOT NULL PRIMARY KEY,
  name VARCHAR(255) NOT NULL,
  created_at DATETIME(6) NOT NULL DEFAULT UTC_TIMESTAMP(6),
  UNIQUE KEY workspaces_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE api_keys (
  id VARCHAR(40) NOT NULL PRIMARY KEY,
  workspace_id VARCHAR(40) NOT NULL,
  account_id VARCHAR(255) NOT NULL,
  key_hash BINARY(32) NOT NULL,
  created_at DATETIME(6) NOT NULL DEFAULT UTC_TIMESTAMP(6),
  revoked_at DATETIME(6) NULL,
  UNIQUE KEY api_keys_hash (key_hash),
  CONSTRAINT api_keys_workspace FOREIGN KEY (workspace_id) REFERENCES workspaces (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE server_secrets (
  name VARCHAR(64) NOT NULL PRIMARY KEY,
  secret VARBINARY(64) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT INTO server_secrets (name, secret) VALUES ('cursor', RANDOM_BYTES(32));

CREATE TABLE environments (
  id VARCHAR(40) NOT NULL PRIMARY KEY,
  workspace_id VARCHAR(40) NOT NULL,
  account_id VARCHAR(255) NOT NULL,
  name VARCHAR(256) NOT NULL,
  description TEXT NULL,
  metadata JSON NOT NULL,
  type VARCHAR(16) NOT NULL,
  scope VARCHAR(16) NULL,
  config JSON NOT NULL,
  revision BIGINT UNSIGNED NOT NULL DEFAULT 1,
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  archived_at DATETIME(6) NULL,
  KEY environments_list (workspace_id, created_at, id),
  CONSTRAINT environments_workspace FOREIGN KEY (workspace_id) REFERENCES workspaces (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE sessions (
  id VARCHAR(40) NOT NULL PRIMARY KEY,
  workspace_id VARCHAR(40) NOT NULL,
  environment_id VARCHAR(40) NOT NULL,
  created_at DATETIME(6) NOT NULL DEFAULT UTC_TIMESTAMP(6),
  KEY sessions_environment (environment_id),
  CONSTRAINT sessions_environment FOREIGN KEY (environment_id) REFERENCES environments (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
