-- Retention of concurrency keys, step 2 of 2: deletes the rows step 1
-- (retention/lock_idle_flow_keys.sql) locked, in the same transaction, that are still
-- idle. A statement of its own so that, under READ COMMITTED, it reads the jobs in a
-- snapshot taken after the locks: a job that became pending in the key and committed
-- before then is seen here, and the key is kept. One that commits later had its trigger's
-- upsert of the row wait for this transaction's lock; the row is gone when it goes on, so
-- the upsert inserts a new one (ON CONFLICT retries a conflict with a deleted row), ready
-- by the job's run_at. While the rows are locked no claim and no job leaving `running`
-- can change them (both lock the row first). Returns the deleted ids.
-- $1 the ids step 1 locked (int8[]).
DELETE FROM sluice.flow_keys k
WHERE k.id = ANY ($1) AND k.running = 0
  AND NOT EXISTS (SELECT 1 FROM sluice.job_types jt
                  WHERE jt.tenant = k.tenant AND jt.name = k.job_type
                    AND jt.key_rate_count IS NOT NULL AND k.tokens IS NOT NULL
                    AND sluice.flow_tokens(k.tokens, k.refilled_at, jt.key_rate_count,
                                           jt.key_rate_period_ms) < jt.key_rate_count)
  AND NOT EXISTS (SELECT 1 FROM sluice.jobs j
                  WHERE j.state = 'pending' AND j.tenant = k.tenant
                    AND j.job_type = k.job_type AND j.flow_key = k.key)
RETURNING k.id
