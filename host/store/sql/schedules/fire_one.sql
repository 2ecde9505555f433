-- → pending from a cron schedule: fires the planned slots of one schedule that
-- schedules/lock_due.sql locked, in the same transaction.
-- $1 schedule id (int8), $2 slots to fire (timestamptz[]), $3 their run_at, same order
-- (timestamptz[]), $4 the new next_slot (timestamptz or NULL), $5 slots the plan skipped
-- (int8), $6 notification channel ('sluice_jobs').
--
-- `planned` draws the job ids up front (it is materialised once: it is referenced twice
-- and calls a volatile function), so the job rows and the slot rows share them; one
-- schedule_slots row per job, whose primary key (schedule_id, slot) makes a slot fired
-- twice abort the transaction. When the job type is gone, nothing is inserted, the slots
-- count as skipped and last_error says why.
WITH s AS (
    SELECT s.tenant, s.job_type, s.payload, s.priority,
           coalesce(s.max_attempts, jt.max_attempts) AS max_attempts,
           jt.name IS NOT NULL AS type_ok
    FROM sluice.schedules s
    LEFT JOIN sluice.job_types jt ON jt.tenant = s.tenant AND jt.name = s.job_type
    WHERE s.id = $1
),
planned AS (
    SELECT u.slot, u.run_at, nextval('sluice.jobs_id_seq') AS job_id
    FROM unnest($2::timestamptz[], $3::timestamptz[]) AS u(slot, run_at)
    WHERE (SELECT type_ok FROM s)
),
jobs_ins AS (
    INSERT INTO sluice.jobs (id, tenant, job_type, payload, priority, run_at, max_attempts)
    SELECT p.job_id, s.tenant, s.job_type, s.payload, s.priority, p.run_at, s.max_attempts
    FROM planned p CROSS JOIN s
    RETURNING id, run_at
),
slots_ins AS (
    INSERT INTO sluice.schedule_slots (schedule_id, slot, job_id)
    SELECT $1, p.slot, p.job_id FROM planned p
    RETURNING slot
),
upd AS (
    UPDATE sluice.schedules SET
        next_slot = $4,
        last_fired_slot = coalesce((SELECT max(slot) FROM slots_ins), last_fired_slot),
        fired_count = fired_count + (SELECT count(*) FROM slots_ins),
        skipped_count = skipped_count + $5
            + (cardinality($2::timestamptz[]) - (SELECT count(*) FROM slots_ins)),
        last_error = CASE
            WHEN cardinality($2::timestamptz[]) = 0 THEN last_error
            WHEN (SELECT type_ok FROM s) THEN NULL
            ELSE format('job type %s no longer exists: its slots are skipped', job_type)
        END,
        updated_at = now()
    WHERE id = $1
    RETURNING id
),
notified AS (
    SELECT pg_notify($6, '') WHERE EXISTS (SELECT 1 FROM jobs_ins WHERE run_at <= now())
)
SELECT (SELECT array_agg(id ORDER BY id) FROM jobs_ins) AS job_ids,
       (SELECT count(*) FROM upd) AS updated,
       (SELECT count(*) FROM notified) AS notified
