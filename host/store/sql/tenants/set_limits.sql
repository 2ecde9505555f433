-- Replaces a tenant's limits (NULL: the host default). No row: unknown tenant.
-- $1 tenant id (text), $2 max_payload_bytes (int4), $3 max_component_bytes,
-- $4 max_timeout_ms, $5 max_fuel, $6 max_memory_bytes, $7 max_output_bytes,
-- $8 max_log_bytes (int8), $9 max_enqueue_per_sec (float8), $10 enqueue_burst (int4),
-- $11 max_http_requests (int4), $12 max_http_request_bytes, $13 max_http_response_bytes (int8),
-- $14 max_follow_ups (int4), $15 max_follow_up_bytes (int8), $16 max_journal_bytes (int8),
-- $17 max_attempts_per_day, $18 max_fuel_per_day, $19 max_egress_bytes_per_day (int8).
-- A quota turned on starts from what the tenant's runs metered today (migration 0033):
-- the claim counts runs only for tenants under a quota.
UPDATE sluice.tenants
SET max_payload_bytes = $2, max_component_bytes = $3, max_timeout_ms = $4, max_fuel = $5,
    max_memory_bytes = $6, max_output_bytes = $7, max_log_bytes = $8,
    max_enqueue_per_sec = $9, enqueue_burst = $10, max_http_requests = $11,
    max_http_request_bytes = $12, max_http_response_bytes = $13, max_follow_ups = $14,
    max_follow_up_bytes = $15, max_journal_bytes = $16, max_attempts_per_day = $17,
    max_fuel_per_day = $18, max_egress_bytes_per_day = $19,
    quota_day = sluice.quota_today(),
    day_attempts = CASE
        WHEN quota AND quota_day = sluice.quota_today() THEN day_attempts
        ELSE (SELECT coalesce(sum(u.runs), 0)::int8 FROM sluice.usage_hourly u
              WHERE u.tenant = $1
                AND u.hour >= sluice.quota_today()::timestamp AT TIME ZONE 'UTC')
    END
WHERE id = $1
RETURNING id, created_at, max_payload_bytes, max_component_bytes, max_timeout_ms, max_fuel,
       max_memory_bytes, max_output_bytes, max_log_bytes, max_enqueue_per_sec, enqueue_burst,
       max_http_requests, max_http_request_bytes, max_http_response_bytes, max_follow_ups,
       max_follow_up_bytes, max_journal_bytes, max_attempts_per_day, max_fuel_per_day,
       max_egress_bytes_per_day, egress_allow, paused
