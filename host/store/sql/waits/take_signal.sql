-- Consumes one signal for a running job's await-signal call at journal sequence number
-- $4 (signals.rs), fenced on id, state and lease token: nothing is taken unless the job
-- runs under this lease. Takes the signal already taken at this same sequence number if
-- there is one (a run that failed before its journal entry was durable replays to the
-- same call and gets the same signal), else the oldest of that name not consumed yet
-- (signals_job_idx), and marks it consumed at $4. Returns whether the fence held,
-- whether a signal was found, and its payload as JSON text ('null' when sent without).
-- $1 job id (int8), $2 lease token (uuid), $3 signal name (text), $4 sequence number
-- (int4).
WITH fence AS (
    SELECT id FROM sluice.jobs
    WHERE id = $1 AND state = 'running' AND lease_token = $2
),
picked AS (
    SELECT s.id
    FROM sluice.signals s
    JOIN fence f ON s.job_id = f.id
    WHERE s.name = $3 AND (s.consumed_seq = $4 OR s.consumed_seq IS NULL)
    ORDER BY s.consumed_seq IS NULL, s.id
    LIMIT 1
    FOR UPDATE OF s
),
taken AS (
    UPDATE sluice.signals s
    SET consumed_seq = $4
    FROM picked p
    WHERE s.id = p.id
    RETURNING coalesce(s.payload::text, 'null') AS payload
)
SELECT EXISTS (SELECT 1 FROM fence) AS fenced,
       EXISTS (SELECT 1 FROM taken) AS found,
       (SELECT payload FROM taken) AS payload
