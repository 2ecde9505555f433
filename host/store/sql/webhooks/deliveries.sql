-- A tenant's deliveries (jobs of type sluice.webhook), newest first: to one endpoint
-- ($2 not NULL) or one delivery ($3 not NULL), at most $4.
-- $1 tenant, $2 endpoint id or NULL, $3 delivery (job) id or NULL, $4 limit (int8).
SELECT j.id, d.endpoint, d.event, ev.event_type, j.state::text AS state, j.attempt,
       j.max_attempts, j.run_at, j.created_at, j.finished_at, j.last_error,
       CASE WHEN j.state = 'completed' THEN (convert_from(j.output, 'UTF8')::jsonb ->> 'status')::int4
            ELSE substring(j.last_error FROM '^HTTP ([0-9]{3}):')::int4 END AS last_status,
       CASE WHEN j.state = 'completed' THEN convert_from(j.output, 'UTF8')::jsonb ->> 'response' END AS response
FROM sluice.jobs j
CROSS JOIN LATERAL (
    SELECT (p ->> 'endpoint')::int8 AS endpoint, (p ->> 'event')::int8 AS event
    FROM (SELECT convert_from(j.payload, 'UTF8')::jsonb AS p) x
) d
LEFT JOIN sluice.webhook_events ev ON ev.tenant = j.tenant AND ev.id = d.event
WHERE j.tenant = $1 AND j.job_type = 'sluice.webhook'
  AND ($2::int8 IS NULL OR d.endpoint = $2)
  AND ($3::int8 IS NULL OR j.id = $3)
ORDER BY j.id DESC
LIMIT $4
