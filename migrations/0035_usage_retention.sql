-- Sluice schema, part 35: usage rows are pruned after a retention period (issue #40,
-- docs/usage.md).
--
-- * usage_hourly_hour_idx: retention (host/store/sql/usage/prune.sql) deletes the hours
--   older than sluice_store::USAGE_RETENTION (400 days: a year of monthly bills and a
--   month to spare) by this range, in bounded batches, without scanning the table. The
--   primary key leads with the tenant, so it cannot serve that range.
--
-- Upgrading a live database: one index on a small table (a row per tenant, job type and
-- hour). Hosts of earlier versions neither use it nor prune usage.

CREATE INDEX usage_hourly_hour_idx ON sluice.usage_hourly (hour);
