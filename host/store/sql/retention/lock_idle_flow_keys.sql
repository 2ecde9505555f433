-- Retention of concurrency keys, step 1 of 2 (one transaction with step 2,
-- retention/delete_idle_flow_keys.sql): locks up to $2 rows of sluice.flow_keys after id
-- $1, in id order, that look idle: no job of the key running (`running` = 0, the count the
-- claim trusts), none pending (jobs_flow_idx), and its token bucket full (or the type has
-- no per-key rate), so a key made again later starts exactly as the deleted one would go
-- on. SKIP LOCKED: a key that an enqueue's trigger, a claim, a finishing job or a flow
-- change holds is busy now; it is left for the next run. Waiting jobs do not keep their
-- key: a waiting job holds no slot, and comes back through `pending`, whose trigger makes
-- the key's row again (migration 0024). What this step reads is re-checked by step 2.
-- $1 after this id (int8; 0 to start), $2 at most this many (int8).
SELECT k.id
FROM sluice.flow_keys k
LEFT JOIN sluice.job_types jt ON jt.tenant = k.tenant AND jt.name = k.job_type
WHERE k.id > $1 AND k.running = 0
  AND (k.tokens IS NULL OR jt.key_rate_count IS NULL
       OR sluice.flow_tokens(k.tokens, k.refilled_at, jt.key_rate_count, jt.key_rate_period_ms)
          >= jt.key_rate_count)
  AND NOT EXISTS (SELECT 1 FROM sluice.jobs j
                  WHERE j.state = 'pending' AND j.tenant = k.tenant
                    AND j.job_type = k.job_type AND j.flow_key = k.key)
ORDER BY k.id
LIMIT $2
FOR UPDATE OF k SKIP LOCKED
