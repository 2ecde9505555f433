-- A job's journal for people (`sluice jobs journal`, GET /v1/jobs/{id}/journal), in order,
-- scoped by tenant through the job row (another tenant's job gives no rows, like a
-- missing one). `replayed`: a later attempt of the job ran after the one that recorded
-- the entry, so it was answered from the journal there.
-- $1 job id (int8), $2 tenant or NULL for any (text).
SELECT l.seq, l.kind, l.request, l.summary, l.result, l.attempt, l.recorded_at,
       (b.attempt > l.attempt) AS replayed
FROM sluice.jobs b
JOIN sluice.journal l ON l.job_id = b.id
WHERE b.id = $1 AND ($2::text IS NULL OR b.tenant = $2)
ORDER BY l.seq
