-- Every tenant with its limits, by id. No parameters.
SELECT id, created_at, max_payload_bytes, max_component_bytes, max_timeout_ms, max_fuel,
       max_memory_bytes, max_output_bytes, max_log_bytes, max_enqueue_per_sec, enqueue_burst,
       max_http_requests, max_http_request_bytes, max_http_response_bytes, max_follow_ups,
       max_follow_up_bytes, max_journal_bytes, max_attempts_per_day, max_fuel_per_day,
       max_egress_bytes_per_day, egress_allow, paused
FROM sluice.tenants
ORDER BY id
