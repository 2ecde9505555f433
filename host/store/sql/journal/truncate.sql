-- Gives back the tail of a durable job's journal from seq $3 on, under the attempt's lease:
-- a failed attempt (guest retry, trap, timeout) drops its last live HTTP call and what
-- followed, so the next attempt makes that call again live (with the same Idempotency-Key)
-- instead of replaying the response that made it fail (docs/durable.md). Nothing is
-- deleted unless the job is `running` with this lease token. The head's counts follow.
-- Returns whether the lease held.
-- $1 job id (int8), $2 lease token (uuid), $3 first seq dropped (int4).
WITH fence AS (
    SELECT id FROM sluice.jobs
    WHERE id = $1 AND state = 'running' AND lease_token = $2
),
dropped AS (
    DELETE FROM sluice.journal l USING fence f
    WHERE l.job_id = f.id AND l.seq >= $3
    RETURNING octet_length(l.kind) + octet_length(l.request) + octet_length(l.summary)
              + octet_length(l.result) AS bytes
),
head AS (
    UPDATE sluice.journal_heads h
    SET entries = h.entries - (SELECT count(*) FROM dropped),
        bytes = h.bytes - (SELECT coalesce(sum(bytes), 0) FROM dropped)
    FROM fence f
    WHERE h.job_id = f.id
)
SELECT EXISTS (SELECT 1 FROM fence) AS fenced
