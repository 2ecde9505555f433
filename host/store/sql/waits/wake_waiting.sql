-- waiting → pending: the waker (Store::wake_waiting, one host every second or so). Up to
-- $2 waiting jobs (jobs_waiting_idx, SKIP LOCKED so a suspension, a signal or a cancel in
-- progress is never waited for) that can run again: their run_at (a sleep's instant, a
-- signal's deadline) is within the look-ahead, or the signal they wait for has come
-- (sluice.signal wakes those itself; this catches a signal committed while the job was
-- suspending), or every job they await has finished (completed, dead, cancelled) or is
-- gone (an id standing for another job, follow_up_aliases of migration 0029: as that
-- job). A timer keeps its run_at (a pending job is claimed from then on); a job woken by
-- what it waited for is due now. What it waited for is cleared. Listeners get one notice:
-- '' if one is due now, else the microseconds until the earliest.
-- $1 look-ahead in microseconds (int8), $2 at most this many jobs (int8), $3 notification
-- channel ('sluice_jobs').
WITH due AS (
    SELECT j.id,
           (j.waiting_for IS NOT NULL
            AND EXISTS (SELECT 1 FROM sluice.signals s
                        WHERE s.job_id = j.id AND s.name = j.waiting_for
                          AND s.consumed_seq IS NULL))
           OR (j.awaited IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM sluice.jobs c
                               WHERE c.id = ANY (j.awaited || ARRAY(
                                         SELECT a.job_id FROM sluice.follow_up_aliases a
                                         WHERE a.parent_id = j.id AND a.id = ANY (j.awaited)))
                                 AND c.state NOT IN ('completed', 'dead', 'cancelled')))
               AS arrived
    FROM sluice.jobs j
    WHERE j.state = 'waiting'
      AND (j.run_at <= now() + $1 * interval '1 microsecond'
           OR (j.waiting_for IS NOT NULL
               AND EXISTS (SELECT 1 FROM sluice.signals s
                           WHERE s.job_id = j.id AND s.name = j.waiting_for
                             AND s.consumed_seq IS NULL))
           OR (j.awaited IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM sluice.jobs c
                               WHERE c.id = ANY (j.awaited || ARRAY(
                                         SELECT a.job_id FROM sluice.follow_up_aliases a
                                         WHERE a.parent_id = j.id AND a.id = ANY (j.awaited)))
                                 AND c.state NOT IN ('completed', 'dead', 'cancelled'))))
    ORDER BY j.run_at
    LIMIT $2
    FOR UPDATE OF j SKIP LOCKED
),
moved AS (
    UPDATE sluice.jobs j
    SET state = 'pending',
        run_at = CASE WHEN d.arrived THEN least(j.run_at, now()) ELSE j.run_at END,
        waiting_for = NULL, awaited = NULL, updated_at = now()
    FROM due d
    WHERE j.id = d.id AND j.state = 'waiting'
    RETURNING j.run_at
),
notified AS (
    SELECT pg_notify($3,
                     CASE WHEN min(m.run_at) <= now() THEN ''
                          ELSE ceil(extract(epoch FROM min(m.run_at) - now()) * 1000000)::int8::text
                     END)
    FROM moved m
    HAVING count(*) > 0
)
SELECT (SELECT count(*) FROM moved) AS woken, (SELECT count(*) FROM notified) AS notified
