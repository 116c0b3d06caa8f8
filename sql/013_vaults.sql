-- Vaults and their credentials (docs/vaults.md, docs/api.md §8). A credential's secret is never
-- stored in clear: `secret` holds what common/vault_crypto.c sealed under the deployment's vault
-- key (a file, never in the database), bound to the credential's id and mcp_server_url. An
-- archived credential's secret is erased (NULL): archiving cannot be undone, and nothing may use
-- it again.
CREATE TABLE vaults (
  id VARCHAR(40) NOT NULL PRIMARY KEY,
  workspace_id VARCHAR(40) NOT NULL,
  display_name VARCHAR(255) NOT NULL,
  metadata JSON NOT NULL,
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  archived_at DATETIME(6) NULL,
  KEY vaults_list (workspace_id, created_at, id),
  CONSTRAINT vaults_workspace FOREIGN KEY (workspace_id) REFERENCES workspaces (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE vault_credentials (
  id VARCHAR(40) NOT NULL PRIMARY KEY,
  vault_id VARCHAR(40) NOT NULL,
  workspace_id VARCHAR(40) NOT NULL,
  display_name VARCHAR(255) NULL,
  metadata JSON NOT NULL,
  auth_type VARCHAR(32) NOT NULL,
  mcp_server_url VARCHAR(2048) NOT NULL,
  secret TEXT NULL,
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  archived_at DATETIME(6) NULL,
  KEY vault_credentials_list (vault_id, created_at, id),
  CONSTRAINT vault_credentials_vault FOREIGN KEY (vault_id) REFERENCES vaults (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The vault ids a session was created with, in the order given (a JSON array of strings): shown
-- as its `vault_ids`, and read by the runner for the session's credentials.
ALTER TABLE sessions
  ADD COLUMN vault_ids JSON NOT NULL DEFAULT '[]';
