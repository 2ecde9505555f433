-- The v19 host's statement (host/store/sql/finish/fail_many.sql at 239caa6, before migration
-- 0020), kept verbatim for tests/it/upgrade.rs: an old host finishing attempts.
-- running → pending (retry after backoff) | dead | cancelled, for a batch.
-- $1 job ids (int8[]), $2 lease tokens (uuid[]), $3 errors (text[]), $4 fatal (bool[]),
-- $5 backoff base µs (float8[]), $6 backoff cap µs (float8[]), $7 jitter fractions
-- (float8[]), $8 fuel used (int8[], elements may be NULL); all in the same order.
-- $9 notification channel ('sluice_jobs'), $10 attempt logs (bytea[], NULL for an
-- attempt that logged nothing), $11 log bytes dropped at the cap (int8[]); in the order
-- of $1, whose ids are distinct and ascending (positions by `width_bucket`, as in
-- finish/complete_many.sql).
--
-- `held` locks every fenced row of the input (found by primary key as in
-- finish/complete_many.sql, in id order so two batches never deadlock on each other) and
-- decides where each goes: cancelled if a cancel was requested, dead if fatal or out of
-- attempts, else pending at now() + min(cap, base·2^(attempt-1))·(1 ± jitter·random()).
-- Every attempt moves into sluice.attempt_history in this statement; listeners get one
-- notice, the microseconds until the earliest retry. Stale leases match nothing and are
-- reported per job by the caller. An attempt with a log adds one row to
-- sluice.attempt_logs (migration 0017); a quiet one writes nothing more.
WITH held AS (
    SELECT j.id, i.error, i.fuel, i.log, i.dropped,
           CASE WHEN j.cancel_requested THEN 'cancelled'
                WHEN i.fatal OR j.attempt >= j.max_attempts THEN 'dead'
                ELSE 'pending'
           END::sluice.job_state AS next_state,
           now() + least(i.cap_us, i.base_us * power(2::float8, least(j.attempt - 1, 62)))
                 * (1 + i.jitter * (2 * random() - 1))
                 * interval '1 microsecond' AS retry_at,
           attempt, attempt_id, attempt_started_at, attempt_worker, lease_token
    FROM sluice.jobs j
    -- The row's own failure, at its id's position in the arrays.
    CROSS JOIN LATERAL (
        SELECT ($2::uuid[])[n] AS token, ($3::text[])[n] AS error, ($4::bool[])[n] AS fatal,
               ($5::float8[])[n] AS base_us, ($6::float8[])[n] AS cap_us,
               ($7::float8[])[n] AS jitter, ($8::int8[])[n] AS fuel,
               ($10::bytea[])[n] AS log, coalesce(($11::int8[])[n], 0) AS dropped
        FROM (SELECT width_bucket(j.id, $1::int8[]) AS n) p
    ) i
    -- By primary key, for the reasons given in finish/complete_many.sql.
    WHERE j.id = ANY ($1::int8[]) AND j.state::text = 'running' AND j.lease_token = i.token
    ORDER BY j.id
    FOR UPDATE OF j
),
moved AS (
    UPDATE sluice.jobs j
    SET state = h.next_state,
        run_at = CASE WHEN h.next_state = 'pending' THEN h.retry_at ELSE j.run_at END,
        finished_at = CASE WHEN h.next_state = 'pending' THEN NULL ELSE now() END,
        last_error = h.error,
        locked_by = NULL, locked_until = NULL, lease_token = NULL, cancel_requested = false,
        updated_at = now(),
        -- The attempt leaves the row: it is archived below.
        attempt_id = NULL, attempt_started_at = NULL, attempt_worker = NULL, attempt_fuel = NULL
    FROM held h
    WHERE j.id = h.id AND j.state::text = 'running' AND j.lease_token = h.lease_token
    RETURNING j.id, j.state, j.run_at, h.error, h.fuel, h.log, h.dropped,
              h.attempt AS ran_attempt, h.attempt_id AS ran_id,
              h.attempt_started_at AS ran_started_at, h.attempt_worker AS ran_worker,
              h.lease_token AS ran_token
),
-- Every running row has its attempt on it (the jobs_attempt_on_row check), so every
-- moved row archives one, finished now.
history AS (
    INSERT INTO sluice.attempt_history
        (id, job_id, attempt, lease_token, worker, started_at, finished_at, outcome, error, fuel_used)
    SELECT m.ran_id, m.id, m.ran_attempt, m.ran_token, m.ran_worker, m.ran_started_at, now(),
           CASE m.state WHEN 'pending' THEN 'retry' WHEN 'dead' THEN 'dead' ELSE 'cancelled' END,
           m.error, m.fuel
    FROM moved m
),
logged AS (
    INSERT INTO sluice.attempt_logs (job_id, attempt_id, attempt, log, dropped_bytes)
    SELECT m.id, m.ran_id, m.ran_attempt, m.log, m.dropped
    FROM moved m
    WHERE m.log IS NOT NULL
),
notified AS (
    SELECT pg_notify($9, CASE WHEN n.at <= now() THEN ''
                              ELSE ceil(extract(epoch FROM n.at - now()) * 1000000)::int8::text
                         END)
    FROM (SELECT min(m.run_at) AS at FROM moved m WHERE m.state = 'pending') n
    WHERE n.at IS NOT NULL
)
SELECT id, state, run_at, (SELECT count(*) FROM notified) AS notified FROM moved
