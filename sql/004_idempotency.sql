-- Idempotency-Key on POST creates: the first response to a key is stored for 24 hours and
-- replayed for the same request; a different request with the same key is refused.

CREATE TABLE idempotency_keys (
  workspace_id VARCHAR(40) NOT NULL,
  idem_key VARCHAR(255) NOT NULL,
  request_hash BINARY(32) NOT NULL,
  status SMALLINT NOT NULL DEFAULT 0,
  response MEDIUMTEXT NULL,
  created_at DATETIME(6) NOT NULL,
  expires_at DATETIME(6) NOT NULL,
  PRIMARY KEY (workspace_id, idem_key),
  KEY idempotency_expiry (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
