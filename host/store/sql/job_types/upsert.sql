-- Registers or replaces a job type in one statement; no row (and nothing written) when the
-- tenant or the tenant's component does not exist.
-- $1 tenant (text), $2 name (text), $3 component id (int8), $4 max_attempts (int4),
-- $5 backoff_base_ms, $6 backoff_cap_ms (int8 or NULL), $7 backoff_jitter (float8 or NULL),
-- $8 timeout_ms, $9 fuel, $10 memory_bytes, $11 output_bytes, $12 log_bytes (int8 or NULL),
-- $13 http_allow (text[], normalised by the host), $14 http_max_requests (int4 or NULL),
-- $15 http_request_bytes, $16 http_response_bytes, $17 http_connect_timeout_ms,
-- $18 http_first_byte_timeout_ms, $19 http_between_bytes_timeout_ms (int8 or NULL),
-- $20 secrets: the granted secret names (text[], validated by the store), $21 durable
-- (bool), $22 journal_bytes (int8 or NULL).
INSERT INTO sluice.job_types AS jt (tenant, name, component_id, max_attempts,
    backoff_base_ms, backoff_cap_ms, backoff_jitter, timeout_ms, fuel, memory_bytes,
    output_bytes, log_bytes, http_allow, http_max_requests, http_request_bytes,
    http_response_bytes, http_connect_timeout_ms, http_first_byte_timeout_ms,
    http_between_bytes_timeout_ms, secrets, durable, journal_bytes)
SELECT c.tenant, $2, c.id, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
       $18, $19, $20, $21, $22
FROM sluice.components c
WHERE c.tenant = $1 AND c.id = $3
ON CONFLICT (tenant, name) DO UPDATE SET
    component_id = EXCLUDED.component_id, max_attempts = EXCLUDED.max_attempts,
    backoff_base_ms = EXCLUDED.backoff_base_ms, backoff_cap_ms = EXCLUDED.backoff_cap_ms,
    backoff_jitter = EXCLUDED.backoff_jitter, timeout_ms = EXCLUDED.timeout_ms,
    fuel = EXCLUDED.fuel, memory_bytes = EXCLUDED.memory_bytes,
    output_bytes = EXCLUDED.output_bytes, log_bytes = EXCLUDED.log_bytes,
    http_allow = EXCLUDED.http_allow, http_max_requests = EXCLUDED.http_max_requests,
    http_request_bytes = EXCLUDED.http_request_bytes,
    http_response_bytes = EXCLUDED.http_response_bytes,
    http_connect_timeout_ms = EXCLUDED.http_connect_timeout_ms,
    http_first_byte_timeout_ms = EXCLUDED.http_first_byte_timeout_ms,
    http_between_bytes_timeout_ms = EXCLUDED.http_between_bytes_timeout_ms,
    secrets = EXCLUDED.secrets, durable = EXCLUDED.durable,
    journal_bytes = EXCLUDED.journal_bytes,
    updated_at = now()
RETURNING tenant, name, component_id, max_attempts, backoff_base_ms, backoff_cap_ms,
       backoff_jitter, timeout_ms, fuel, memory_bytes, output_bytes, log_bytes,
       http_allow, http_max_requests, http_request_bytes, http_response_bytes,
       http_connect_timeout_ms, http_first_byte_timeout_ms, http_between_bytes_timeout_ms,
       secrets, durable, journal_bytes, created_at, updated_at, paused, max_running,
       max_running_per_key, rate_count, rate_period_ms, key_rate_count, key_rate_period_ms,
       max_snoozes
