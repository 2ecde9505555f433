-- Metered usage (migration 0033) summed per tenant, and per job type or per hour.
-- $1 tenant or NULL for all (text), $2 from (timestamptz; the hour it falls in counts),
-- $3 until, exclusive, or NULL for now (timestamptz), $4 also by: 'type', 'hour' or ''
-- (text). Read-only; the primary key (tenant, hour, job_type) finds the rows.
SELECT u.tenant,
       CASE WHEN $4::text = 'type' THEN u.job_type END AS job_type,
       CASE WHEN $4::text = 'hour' THEN u.hour END AS hour,
       sum(u.runs)::int8 AS runs, sum(u.fuel)::int8 AS fuel, sum(u.wall_ms)::int8 AS wall_ms,
       max(u.peak_memory_bytes)::int8 AS peak_memory_bytes,
       sum(u.http_requests)::int8 AS http_requests,
       sum(u.http_bytes_out)::int8 AS http_bytes_out,
       sum(u.http_bytes_in)::int8 AS http_bytes_in,
       sum(u.payload_bytes)::int8 AS payload_bytes,
       sum(u.output_bytes)::int8 AS output_bytes, sum(u.log_bytes)::int8 AS log_bytes
FROM sluice.usage_hourly u
WHERE ($1::text IS NULL OR u.tenant = $1)
  AND u.hour >= date_trunc('hour', $2::timestamptz, 'UTC')
  AND ($3::timestamptz IS NULL OR u.hour < $3)
GROUP BY 1, 2, 3
ORDER BY 1, 3, 2
