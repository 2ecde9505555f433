-- Job types of one tenant or all, by tenant and name.
-- $1 tenant or NULL for all (text).
SELECT tenant, name, component_id, max_attempts, backoff_base_ms, backoff_cap_ms,
       backoff_jitter, timeout_ms, fuel, memory_bytes, output_bytes, log_bytes,
       http_allow, http_max_requests, http_request_bytes, http_response_bytes,
       http_connect_timeout_ms, http_first_byte_timeout_ms, http_between_bytes_timeout_ms,
       secrets, durable, journal_bytes, created_at, updated_at, paused, max_running,
       max_running_per_key, rate_count, rate_period_ms, key_rate_count, key_rate_period_ms,
       max_snoozes
FROM sluice.job_types
WHERE ($1::text IS NULL OR tenant = $1)
ORDER BY tenant, name
