-- This database's identity. Docker and the HTTP backends label every sandbox they create with
-- it, and the reconciler's sweep of sandboxes no session owns lists only those carrying it
-- (docs/sandbox.md, No orphans), so two stacks sharing one Docker Engine or one account never
-- remove each other's. Not a secret: kept beside the server's secrets because it is made once
-- per database the same way.
INSERT INTO server_secrets (name, secret) VALUES ('deployment', RANDOM_BYTES(16));
