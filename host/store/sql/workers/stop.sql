-- running | lost → stopped: a process shutting down marks its registration stopped, so
-- its id may be used again at once. Matches the session, so it never stops a later
-- process that reused the id. Returns the id when it stopped the row.
-- $1 id (text), $2 session (uuid).
UPDATE sluice.workers
SET stopped_at = now(), last_heartbeat = now()
WHERE id = $1 AND session = $2 AND stopped_at IS NULL
RETURNING id
