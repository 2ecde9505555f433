-- Claim one batch of 256 rows of lever.cur, then complete it by moving the rows to the
-- append-only lever.fin (DELETE ... RETURNING into INSERT).
SELECT (nextval('lever.batch') - 1) * 256 + (SELECT min(id) FROM sluice.jobs) AS lo \gset
UPDATE lever.cur j SET state = 'running', attempt = j.attempt + 1, locked_by = 'w',
  locked_until = now() + interval '5 min', lease_token = gen_random_uuid(), updated_at = now(),
  attempt_id = nextval('sluice.attempt_history_id_seq'), attempt_started_at = clock_timestamp(),
  attempt_worker = 'w'
WHERE j.id >= :lo AND j.id < :lo + 256 AND j.state = 'pending';
WITH done AS (
  DELETE FROM lever.cur j WHERE j.id >= :lo AND j.id < :lo + 256 AND j.state::text = 'running'
  RETURNING j.*
)
INSERT INTO lever.fin
SELECT id, tenant, job_type, payload, priority, 'completed', run_at, attempt, max_attempts,
       idempotency_key, key_scope, NULL, NULL, NULL, false, last_error, '\x6f6b', created_at,
       now(), now(), attempt_id, attempt_started_at, attempt_worker, 1000, parent_id, parent_seq
FROM done;
