-- Refreshes the planner's statistics on the jobs table (after a bulk load). No parameters.
ANALYZE sluice.jobs
