-- The transactional outbox's function (migrations/0016_webhooks.sql).
-- $1 tenant, $2 event type, $3 payload (jsonb), $4 idempotency key or NULL, $5
-- traceparent and $6 tracestate or NULL (migration 0034: its deliveries continue them).
SELECT sluice.send_event($1, $2, $3, $4, $5, $6)
