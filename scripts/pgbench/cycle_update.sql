-- Claim then complete one batch of 256 rows of lever.:t by id range (see variants.sql);
-- `pgbench -D t=cur` (or hot75, hot50) names the copy.
SELECT (nextval('lever.batch') - 1) * 256 + (SELECT min(id) FROM sluice.jobs) AS lo \gset
UPDATE lever.:t j SET state = 'running', attempt = j.attempt + 1, locked_by = 'w',
  locked_until = now() + interval '5 min', lease_token = gen_random_uuid(), updated_at = now(),
  attempt_id = nextval('sluice.attempt_history_id_seq'), attempt_started_at = clock_timestamp(),
  attempt_worker = 'w'
WHERE j.id >= :lo AND j.id < :lo + 256 AND j.state = 'pending';
UPDATE lever.:t j SET state = 'completed', output = '\x6f6b', finished_at = now(), updated_at = now(),
  attempt_fuel = 1000, locked_by = NULL, locked_until = NULL, lease_token = NULL,
  cancel_requested = false
WHERE j.id >= :lo AND j.id < :lo + 256 AND j.state::text = 'running';
