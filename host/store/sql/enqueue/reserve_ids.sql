-- Reserves job ids for follow-up jobs (Store::reserve_job_ids): draws $1 values from
-- sluice.jobs_id_seq, the sequence every enqueue draws from, so no other job ever gets
-- them; nothing is inserted (a job is inserted under one later, through
-- enqueue/enqueue_reserved_jobs.sql, or never).
-- $1 how many (int4).
SELECT nextval('sluice.jobs_id_seq') FROM generate_series(1, $1)
