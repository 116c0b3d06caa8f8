-- Test-only migration: tests/deb/run.sh adds it to the upgrade package (never to a real one)
-- and checks it ran on upgrade and that the data made before it survived.
CREATE TABLE test_upgrade_marker (
  id INT NOT NULL PRIMARY KEY,
  note VARCHAR(64) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT INTO test_upgrade_marker (id, note) VALUES (1, 'applied by the upgrade');
