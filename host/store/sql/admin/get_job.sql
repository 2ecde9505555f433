-- One job with its payload and output. run_at is clamped to the readable range
-- (host/store/src/time_range.rs) so an old out-of-range row cannot break the reader.
-- Its follow-up jobs: the first 100 ids in the order the parent asked for them
-- (admin.rs MAX_CHILDREN_SHOWN) and how many there are, through jobs_parent_uidx. Its
-- concurrency key ('' in flow_key is the lane without one: migration 0024). What a
-- waiting job waits for and its snoozes (migration 0027).
-- $1 job id (int8), $2 tenant or NULL for any (text).
SELECT id, tenant, job_type, payload, priority::int4 AS priority, state,
       least(greatest(run_at, timestamptz '1970-01-01 00:00:00+00'), timestamptz '9999-12-31 23:59:59.999999+00') AS run_at,
       attempt, max_attempts, idempotency_key, key_scope, locked_by, locked_until,
       cancel_requested, last_error, output, created_at, updated_at, finished_at, parent_id,
       coalesce((SELECT array_agg(c.id ORDER BY c.parent_seq)
                 FROM (SELECT id, parent_seq FROM sluice.jobs
                       WHERE parent_id = $1 ORDER BY parent_seq LIMIT 100) c),
                '{}') AS children,
       (SELECT count(*) FROM sluice.jobs WHERE parent_id = $1) AS children_count,
       nullif(flow_key, '') AS concurrency_key,
       waiting_for, awaited, snoozes
FROM sluice.jobs
WHERE id = $1 AND ($2::text IS NULL OR tenant = $2)
