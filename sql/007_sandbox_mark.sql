-- "A sandbox may exist": set on a provision intent, under the intent's lease, BEFORE the backend
-- is asked to create the sandbox. Deleting a session decides from it whether a teardown is
-- needed (never from attempts, which --retry resets). Intents that got past their first claim
-- before this column existed may have made a sandbox.
ALTER TABLE provisioning_intents ADD COLUMN sandbox_may_exist TINYINT(1) NOT NULL DEFAULT 0;
UPDATE provisioning_intents SET sandbox_may_exist = 1
  WHERE attempts > 0 OR state <> 'pending' OR JSON_LENGTH(steps_done) > 0
  OR sandbox_id IS NOT NULL;
