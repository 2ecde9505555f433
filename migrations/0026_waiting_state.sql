-- Sluice schema, part 26: the job state `waiting` (issue #43, durable waits).
--
-- A durable job that suspends (a long sleep, an awaited signal, awaited follow-up jobs)
-- leaves `running` for `waiting`: no lease, no attempt on the row, no slot, not claimable,
-- not finished. Migration 0027 adds what a waiting job waits for and the statements
-- around it; this one only adds the enum value, because a value added by ALTER TYPE ...
-- ADD VALUE cannot be used in the transaction that adds it (each migration file runs in
-- its own transaction, so 0027 may use it).
--
-- Upgrading a live database: a catalog change only. Hosts of earlier versions never see
-- a waiting job until a host of this version suspends one.

ALTER TYPE sluice.job_state ADD VALUE 'waiting' AFTER 'running';
