-- The v19 host's statement (host/store/sql/finish/complete_many.sql at 239caa6, before migration
-- 0020), kept verbatim for tests/it/upgrade.rs: an old host finishing attempts.
-- running → completed, for a batch: one statement applies every outcome whose lease still
-- holds; stale ones match nothing and the caller reports them per job (LeaseLost). The
-- attempt stays on the completed row (migration 0009) with the fuel it used: a completion
-- writes one row version and nothing else.
-- $1 job ids (int8[]), $2 lease tokens (uuid[]), $3 outputs (bytea[]), $4 fuel used
-- (int8[], elements may be NULL), $5 attempt logs (bytea[], an element NULL for an
-- attempt that logged nothing, the whole array NULL when none did), $6 log bytes dropped
-- at the cap (int8[]); all in the same order, that of $1, whose ids are distinct and
-- ascending.
--
-- An applied outcome with a log adds one row to sluice.attempt_logs (migration 0017),
-- keyed by the attempt on the row; a quiet one writes nothing more, and a batch of quiet
-- ones ($5 NULL) does not even look for logs (a one-time filter).
--
-- One table, no join: the rows are found by primary key (`id = ANY`), and each row's
-- token, output and fuel are read from the arrays at its id's position, which
-- `width_bucket` finds by binary search in the sorted $1 (`array_position` scanned it
-- for every row: a batch's look-ups grew with its square). Joined with
-- `unnest`, the planner picked by estimate between a probe per outcome, a scan of the
-- whole table (13 ms for 100 outcomes early in a drain) and a bitmap scan of the
-- running-only partial index, which walked every dead entry the drain had left in it
-- (40,000 for a batch of 240: the estimate does not see them and bitmap scans never mark
-- them dead). The state is compared as text so that no plan can match that index
-- (migration 0008's claim does the same for the pending-only indexes).
WITH done AS (
    UPDATE sluice.jobs j
    SET state = 'completed', output = ($3::bytea[])[width_bucket(j.id, $1::int8[])],
        finished_at = now(), updated_at = now(),
        attempt_fuel = ($4::int8[])[width_bucket(j.id, $1::int8[])],
        locked_by = NULL, locked_until = NULL, lease_token = NULL, cancel_requested = false
    WHERE j.id = ANY ($1::int8[]) AND j.state::text = 'running'
      AND j.lease_token = ($2::uuid[])[width_bucket(j.id, $1::int8[])]
    RETURNING j.id, j.attempt, j.attempt_id
),
logged AS (
    INSERT INTO sluice.attempt_logs (job_id, attempt_id, attempt, log, dropped_bytes)
    SELECT d.id, d.attempt_id, d.attempt, l.log, l.dropped
    FROM done d
    CROSS JOIN LATERAL (
        SELECT ($5::bytea[])[n] AS log, coalesce(($6::int8[])[n], 0) AS dropped
        FROM (SELECT width_bucket(d.id, $1::int8[]) AS n) p
    ) l
    WHERE $5::bytea[] IS NOT NULL AND l.log IS NOT NULL
)
SELECT id FROM done
