-- Serialises uploads of one component name (transaction advisory lock), so concurrent
-- uploads get distinct versions.
-- $1 tenant (text), $2 component name (text).
SELECT pg_advisory_xact_lock(hashtextextended('sluice.components/' || $1 || '/' || $2, 0))
