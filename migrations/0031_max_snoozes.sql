-- Sluice schema, part 31: how many times one job of a type may snooze (issue #38,
-- `flow.snooze`; wit/README.md "Snoozes are counted per job; one beyond `--max-snoozes`
-- fails the attempt retryably").
--
-- * job_types.max_snoozes: the type's limit (`sluice types set T --max-snoozes N`,
--   `PATCH /v1/job-types/{type}/flow` `max_snoozes`); NULL: the host's default (25).
--   0 is allowed: a job of the type may not snooze at all (its first snooze fails the
--   attempt). Read by sql/finish/suspend_lock.sql when a run snoozes.
--
-- Upgrading a live database: a nullable column (no rewrite). Hosts of earlier versions
-- keep applying their fixed limit.

ALTER TABLE sluice.job_types
    ADD COLUMN max_snoozes integer
        CONSTRAINT job_types_max_snoozes_check CHECK (max_snoozes >= 0);
COMMENT ON COLUMN sluice.job_types.max_snoozes IS
    'Snoozes one job of this type may take (NULL: the host default, 25). See migrations/0031_max_snoozes.sql.';
