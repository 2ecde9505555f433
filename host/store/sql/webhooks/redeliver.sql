-- A new delivery (job) of the event of delivery $2 to the same endpoint: no row when the
-- tenant has no such delivery, NULL when its endpoint is gone.
-- $1 tenant, $2 delivery (job) id.
SELECT CASE WHEN e.id IS NOT NULL
            THEN (sluice.webhook_enqueue($1, d.event, ARRAY[e.id]))[1] END
FROM sluice.jobs j
CROSS JOIN LATERAL (
    SELECT (p ->> 'endpoint')::int8 AS endpoint, (p ->> 'event')::int8 AS event
    FROM (SELECT convert_from(j.payload, 'UTF8')::jsonb AS p) x
) d
LEFT JOIN sluice.webhook_endpoints e ON e.tenant = $1 AND e.id = d.endpoint
WHERE j.tenant = $1 AND j.id = $2 AND j.job_type = 'sluice.webhook'
