-- (absent | stopped | lost) → running: registers a process in the worker registry, and
-- refuses the id of a live one, in one statement. The upsert replaces an existing row
-- only if it is stopped or lost (not stopped, last heartbeat older than its lease); a
-- live row is left as it is. `registered` says whether this process got the id; the
-- other columns describe the row that was there before (NULL when there was none, or
-- when another process registered the id at the same moment: its row is not visible
-- to this statement's snapshot).
-- $1 id (text), $2 kind ('worker' | 'scheduler'), $3 session (uuid), $4 hostname (text),
-- $5 pid (int4), $6 version (text), $7 contracts (text[]), $8 concurrency (int4, NULL
-- for a scheduler), $9 lease in microseconds (int8).
WITH registered AS (
    INSERT INTO sluice.workers AS w
        (id, kind, session, hostname, pid, version, contracts, concurrency, lease_us)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
    ON CONFLICT (id) DO UPDATE
    SET kind = excluded.kind, session = excluded.session, hostname = excluded.hostname,
        pid = excluded.pid, version = excluded.version, contracts = excluded.contracts,
        concurrency = excluded.concurrency, lease_us = excluded.lease_us,
        started_at = now(), last_heartbeat = now(), stopped_at = NULL
    WHERE w.stopped_at IS NOT NULL
       OR w.last_heartbeat < now() - w.lease_us * interval '1 microsecond'
    RETURNING w.id
)
SELECT EXISTS (SELECT 1 FROM registered) AS registered,
       old.kind, old.hostname, old.pid, old.last_heartbeat,
       extract(epoch FROM now() - old.last_heartbeat)::float8 AS seconds_ago,
       old.lease_us
FROM (SELECT 1) AS one
LEFT JOIN sluice.workers old ON old.id = $1
