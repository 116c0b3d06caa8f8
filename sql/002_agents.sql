-- Agents (docs/api.md §5). The agent row carries identity, workspace, the current version and the
-- timestamps; every version's full definition (name, description, system, model, mcp_servers,
-- tools, skills, execution_identity, multiagent, metadata) is its own row, written once: an
-- update inserts the next version and moves agents.version, so sessions can pin any version.

CREATE TABLE agents (
  id VARCHAR(40) NOT NULL PRIMARY KEY,
  workspace_id VARCHAR(40) NOT NULL,
  account_id VARCHAR(255) NOT NULL,
  version BIGINT UNSIGNED NOT NULL DEFAULT 1,
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  archived_at DATETIME(6) NULL,
  KEY agents_list (workspace_id, created_at, id),
  CONSTRAINT agents_workspace FOREIGN KEY (workspace_id) REFERENCES workspaces (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE agent_versions (
  agent_id VARCHAR(40) NOT NULL,
  version BIGINT UNSIGNED NOT NULL,
  definition JSON NOT NULL,
  created_at DATETIME(6) NOT NULL,
  PRIMARY KEY (agent_id, version),
  CONSTRAINT agent_versions_agent FOREIGN KEY (agent_id) REFERENCES agents (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
