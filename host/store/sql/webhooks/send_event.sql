-- The transactional outbox's function (migrations/0016_webhooks.sql).
-- $1 tenant, $2 event type, $3 payload (jsonb), $4 idempotency key or NULL.
SELECT sluice.send_event($1, $2, $3, $4)
