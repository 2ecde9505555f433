-- What the next attempt of a durable job replays: the pinned component and every journal
-- entry in order. No row: the job has journaled nothing (its attempt runs the type's
-- component and pins it with its first append). One row with NULL seq: a head without
-- entries.
-- $1 job id (int8).
SELECT h.component_id, h.bytes AS journal_bytes, j.seq, j.kind, j.request, j.summary,
       j.result
FROM sluice.journal_heads h
LEFT JOIN sluice.journal j ON j.job_id = h.job_id
WHERE h.job_id = $1
ORDER BY j.seq
