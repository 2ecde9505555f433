-- Points a registered job type at another component of the same tenant (a rollback or a
-- roll forward to a stored version), keeping every other setting. One guarded UPDATE:
-- no row (and nothing written) when the type or the tenant's component does not exist.
-- Jobs already queued run the new component from their next claim.
-- $1 tenant (text), $2 job type name (text), $3 component id (int8).
UPDATE sluice.job_types jt SET component_id = c.id, updated_at = now()
FROM sluice.components c
WHERE jt.tenant = $1 AND jt.name = $2 AND c.tenant = $1 AND c.id = $3
RETURNING jt.tenant, jt.name, jt.component_id, jt.max_attempts, jt.backoff_base_ms,
       jt.backoff_cap_ms, jt.backoff_jitter, jt.timeout_ms, jt.fuel, jt.memory_bytes,
       jt.output_bytes, jt.log_bytes, jt.http_allow, jt.http_max_requests,
       jt.http_request_bytes, jt.http_response_bytes, jt.http_connect_timeout_ms,
       jt.http_first_byte_timeout_ms, jt.http_between_bytes_timeout_ms, jt.secrets,
       jt.durable, jt.journal_bytes, jt.created_at, jt.updated_at, jt.paused, jt.max_running,
       jt.max_running_per_key, jt.rate_count, jt.rate_period_ms, jt.key_rate_count,
       jt.key_rate_period_ms, jt.max_snoozes
