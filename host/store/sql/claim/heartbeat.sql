-- running → running: extends every lease a worker still holds, in one statement; returns
-- the rows extended and their cancel flag (a lease missing from the result was lost).
-- The same statement renews the worker's row in the registry (sluice.workers, a no-op
-- for an unregistered worker), so an idle worker, sent with no leases, still heartbeats.
-- By primary key, each row's token at its id's position (see finish/complete_many.sql).
-- $1 worker (text), $2 job ids, distinct and ascending (int8[]), $3 lease tokens,
-- same order (uuid[]),
-- $4 lease in microseconds (int8).
WITH registry AS (
    UPDATE sluice.workers SET last_heartbeat = now()
    WHERE id = $1 AND stopped_at IS NULL
)
UPDATE sluice.jobs j
SET locked_until = now() + $4 * interval '1 microsecond', updated_at = now()
WHERE j.id = ANY ($2::int8[]) AND j.state::text = 'running'
  AND j.lease_token = ($3::uuid[])[width_bucket(j.id, $2::int8[])] AND j.locked_by = $1
RETURNING j.id, j.cancel_requested
