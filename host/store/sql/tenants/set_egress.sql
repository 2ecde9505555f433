-- Replaces the operator's bound on what a tenant's job types may be granted over HTTP
-- (entries already parsed and normalised by the host; NULL: no bound beyond the host's
-- deny list). No row: unknown tenant.
-- $1 tenant id (text), $2 entries or NULL (text[]).
UPDATE sluice.tenants
SET egress_allow = $2
WHERE id = $1
RETURNING id, created_at, max_payload_bytes, max_component_bytes, max_timeout_ms, max_fuel,
       max_memory_bytes, max_output_bytes, max_log_bytes, max_enqueue_per_sec, enqueue_burst,
       max_http_requests, max_http_request_bytes, max_http_response_bytes, max_follow_ups,
       max_follow_up_bytes, max_journal_bytes, max_attempts_per_day, max_fuel_per_day,
       max_egress_bytes_per_day, egress_allow, paused
