-- Jobs newest first, without payload and output (their sizes and the output's first 120
-- bytes instead). Not complete on its own: `Store::list` appends the filters it was given
-- (AND tenant = $n, AND state = '<literal>' so the partial indexes apply, AND job_type =
-- $n, AND parent_id = $n, AND id < $n), then ORDER BY id DESC LIMIT $n. No parameters of its own.
SELECT id, tenant, job_type, octet_length(payload) AS payload_size,
       priority::int4 AS priority, state,
       least(greatest(run_at, timestamptz '1970-01-01 00:00:00+00'), timestamptz '9999-12-31 23:59:59.999999+00') AS run_at,
       attempt, max_attempts, idempotency_key, key_scope, locked_by, locked_until,
       cancel_requested, last_error, octet_length(output) AS output_size,
       substring(output FROM 1 FOR 120) AS output_head, created_at, updated_at, finished_at,
       parent_id
FROM sluice.jobs
WHERE true
