-- A `sluice.test` event sent to one endpoint only, whatever its filter or state.
-- $1 tenant, $2 endpoint id (must be the tenant's: checked by the caller in the same
-- statement through the join), $3 payload (jsonb).
WITH target AS (
    SELECT e.id FROM sluice.webhook_endpoints e WHERE e.tenant = $1 AND e.id = $2
),
event AS (
    INSERT INTO sluice.webhook_events (id, tenant, event_type, body)
    SELECT n.id, $1, 'sluice.test', sluice.webhook_body(n.id, 'sluice.test', $3)
    FROM target, LATERAL (SELECT nextval('sluice.webhook_events_id_seq') AS id) n
    RETURNING id
)
SELECT ev.id, (sluice.webhook_enqueue($1, ev.id, ARRAY[$2::int8]))[1] FROM event ev
