-- running → completed, for a batch: one statement applies every outcome whose lease still
-- holds; stale ones match nothing and the caller reports them per job (LeaseLost). The
-- attempt stays on the completed row (migration 0009) with the fuel it used: a completion
-- writes one row version and nothing else.
-- $1 job ids (int8[]), $2 lease tokens (uuid[]), $3 outputs (bytea[]), $4 fuel used
-- (int8[], elements may be NULL); all in the same order.
--
-- One table, no join: the rows are found by primary key (`id = ANY`), and each row's
-- token, output and fuel are read from the arrays at its id's position. Joined with
-- `unnest`, the planner picked by estimate between a probe per outcome, a scan of the
-- whole table (13 ms for 100 outcomes early in a drain) and a bitmap scan of the
-- running-only partial index, which walked every dead entry the drain had left in it
-- (40,000 for a batch of 240: the estimate does not see them and bitmap scans never mark
-- them dead). The state is compared as text so that no plan can match that index
-- (migration 0008's claim does the same for the pending-only indexes).
UPDATE sluice.jobs j
SET state = 'completed', output = ($3::bytea[])[array_position($1::int8[], j.id)],
    finished_at = now(), updated_at = now(),
    attempt_fuel = ($4::int8[])[array_position($1::int8[], j.id)],
    locked_by = NULL, locked_until = NULL, lease_token = NULL, cancel_requested = false
WHERE j.id = ANY ($1::int8[]) AND j.state::text = 'running'
  AND j.lease_token = ($2::uuid[])[array_position($1::int8[], j.id)]
RETURNING j.id
