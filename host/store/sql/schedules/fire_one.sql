-- → pending from a cron schedule: fires the planned slots of one schedule that
-- schedules/lock_due.sql locked, in the same transaction.
-- $1 schedule id (int8), $2 slots to fire (timestamptz[]), $3 their run_at, same order
-- (timestamptz[]), $4 the new next_slot (timestamptz or NULL), $5 slots the plan skipped
-- (int8), $6 default payload limit (int8, for tenants without max_payload_bytes).
--
-- The jobs are inserted by sluice.enqueue_jobs(...) (migration 0011), like every other
-- new job: it checks the job type still exists and the payload still fits the tenant's
-- limit, draws the ids in slot order and sends the wake-up notice. Then one
-- schedule_slots row per job, whose primary key (schedule_id, slot) makes a slot fired
-- twice abort the transaction. When the jobs cannot be enqueued, nothing is inserted,
-- the slots count as skipped and last_error says why.
WITH s AS (
    SELECT s.tenant, s.job_type, s.payload, s.priority, s.max_attempts,
           cardinality($2::timestamptz[]) AS n
    FROM sluice.schedules s
    WHERE s.id = $1
),
enqueued AS (
    SELECT e.problem, e.payload_size, e.payload_limit, e.ids
    FROM s
    CROSS JOIN LATERAL sluice.enqueue_jobs(
        array_fill(s.tenant, ARRAY[s.n]), array_fill(s.job_type, ARRAY[s.n]),
        array_fill(s.payload, ARRAY[s.n]), array_fill(s.priority, ARRAY[s.n]),
        NULL, $3::timestamptz[], array_fill(s.max_attempts, ARRAY[s.n]),
        NULL, NULL, $6::int8) e
),
slots_ins AS (
    INSERT INTO sluice.schedule_slots (schedule_id, slot, job_id)
    SELECT $1, u.slot, u.job_id
    FROM enqueued e
    CROSS JOIN LATERAL unnest($2::timestamptz[], e.ids) AS u(slot, job_id)
    WHERE e.ids IS NOT NULL
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
            WHEN (SELECT e.problem FROM enqueued e) IS NULL THEN NULL
            WHEN (SELECT e.problem FROM enqueued e) = 'job_type'
                THEN format('job type %s no longer exists: its slots are skipped', job_type)
            WHEN (SELECT e.problem FROM enqueued e) = 'payload'
                THEN format('payload is %s bytes, over the limit of %s bytes: its slots are skipped',
                            (SELECT e.payload_size FROM enqueued e),
                            (SELECT e.payload_limit FROM enqueued e))
            ELSE format('tenant %s no longer exists: its slots are skipped', tenant)
        END,
        updated_at = now()
    WHERE id = $1
    RETURNING id
)
SELECT (SELECT e.ids FROM enqueued e) AS job_ids,
       (SELECT count(*) FROM upd) AS updated
