-- Retention: deletes up to $2 events created before now() - $1 microseconds (int8) that no
-- pending or running delivery still needs. Returns how many.
WITH gone AS (
    DELETE FROM sluice.webhook_events ev
    WHERE ev.id IN (
        SELECT e.id FROM sluice.webhook_events e
        WHERE e.created_at < now() - $1 * interval '1 microsecond'
          AND NOT EXISTS (
              SELECT 1 FROM sluice.jobs j
              WHERE j.tenant = e.tenant AND j.job_type = 'sluice.webhook'
                AND j.state IN ('pending', 'running', 'waiting')
                AND convert_from(j.payload, 'UTF8')::jsonb -> 'event' = to_jsonb(e.id))
        ORDER BY e.created_at
        LIMIT $2)
    RETURNING 1
)
SELECT count(*) FROM gone
