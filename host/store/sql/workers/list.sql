-- Every registered process with its state against the database clock: `stopped` (it
-- shut down), `lost` (not stopped, no heartbeat for longer than its lease: it died or
-- cannot reach the database), else `running`. Running first, then lost, then stopped;
-- newest start first within each.
-- No parameters.
SELECT id, kind, hostname, pid, version, contracts, concurrency, lease_us, started_at,
       last_heartbeat, stopped_at, state
FROM (
    SELECT w.*,
           CASE WHEN w.stopped_at IS NOT NULL THEN 'stopped'
                WHEN w.last_heartbeat < now() - w.lease_us * interval '1 microsecond' THEN 'lost'
                ELSE 'running' END AS state
    FROM sluice.workers w
) AS listed
ORDER BY CASE state WHEN 'running' THEN 0 WHEN 'lost' THEN 1 ELSE 2 END,
         started_at DESC, id
