-- running → running: a registered process without jobs to renew (`sluice scheduler`)
-- says it is alive. Returns its id while the row is still this registration's (same
-- session, not stopped); no row: another process took the id after this one was lost.
-- (A worker's row is renewed by the job heartbeat instead, claim/heartbeat.sql.)
-- $1 id (text), $2 session (uuid).
UPDATE sluice.workers
SET last_heartbeat = now()
WHERE id = $1 AND session = $2 AND stopped_at IS NULL
RETURNING id
