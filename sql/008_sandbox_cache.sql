-- Package cache entries (reconciler/cache.c): one per (backend, key), the key being a hash of
-- the environment, the base image and the captured package lists. The backend holds the entry
-- itself (docker: an image terrarium-cache:KEY); this row says when it was last used and for
-- which environment, so the reconciler's runs can remove stale entries and those of deleted
-- environments.
CREATE TABLE sandbox_cache (
  backend VARCHAR(32) NOT NULL,
  cache_key CHAR(64) NOT NULL,
  environment_id VARCHAR(40) NOT NULL,
  created_at DATETIME(6) NOT NULL,
  last_used_at DATETIME(6) NOT NULL,
  PRIMARY KEY (backend, cache_key),
  KEY sandbox_cache_used (last_used_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Drift checks (a bound sandbox removed behind the reconciler's back): each run checks the
-- bindings checked longest ago.
ALTER TABLE session_sandboxes ADD COLUMN checked_at DATETIME(6) NULL;
CREATE INDEX session_sandboxes_checked ON session_sandboxes (checked_at);
