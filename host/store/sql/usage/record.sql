-- Adds what workers metered to sluice.usage_hourly (migration 0033), in the current hour
-- (UTC, by the database's clock). One element per (tenant, job type) in each array, all
-- in the same order: $1 tenants (text[]), $2 job types (text[]), $3 runs, $4 fuel,
-- $5 wall time in ms, $6 peak memory in bytes (the largest of the runs), $7 outbound
-- requests, $8 request body bytes sent, $9 response body bytes read, $10 payload bytes,
-- $11 output bytes, $12 log bytes (int8[] each). Rows are written in key order, so that
-- two workers' batches never wait on each other in a circle.
INSERT INTO sluice.usage_hourly AS u
    (tenant, hour, job_type, runs, fuel, wall_ms, peak_memory_bytes, http_requests,
     http_bytes_out, http_bytes_in, payload_bytes, output_bytes, log_bytes)
SELECT d.tenant, date_trunc('hour', now(), 'UTC'), d.job_type, d.runs, d.fuel, d.wall_ms,
       d.peak_memory_bytes, d.http_requests, d.http_bytes_out, d.http_bytes_in,
       d.payload_bytes, d.output_bytes, d.log_bytes
FROM unnest($1::text[], $2::text[], $3::int8[], $4::int8[], $5::int8[], $6::int8[],
            $7::int8[], $8::int8[], $9::int8[], $10::int8[], $11::int8[], $12::int8[])
     AS d(tenant, job_type, runs, fuel, wall_ms, peak_memory_bytes, http_requests,
          http_bytes_out, http_bytes_in, payload_bytes, output_bytes, log_bytes)
ORDER BY d.tenant, d.job_type
ON CONFLICT (tenant, hour, job_type) DO UPDATE
SET runs = u.runs + excluded.runs,
    fuel = u.fuel + excluded.fuel,
    wall_ms = u.wall_ms + excluded.wall_ms,
    peak_memory_bytes = greatest(u.peak_memory_bytes, excluded.peak_memory_bytes),
    http_requests = u.http_requests + excluded.http_requests,
    http_bytes_out = u.http_bytes_out + excluded.http_bytes_out,
    http_bytes_in = u.http_bytes_in + excluded.http_bytes_in,
    payload_bytes = u.payload_bytes + excluded.payload_bytes,
    output_bytes = u.output_bytes + excluded.output_bytes,
    log_bytes = u.log_bytes + excluded.log_bytes
