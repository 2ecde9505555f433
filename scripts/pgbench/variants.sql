SET client_min_messages = warning;
-- Copies of sluice.jobs for the schema-lever measurement (scripts/pgbench-levers):
--   cur:   the table as it is (every index and constraint);
--   hot75: the same columns and constraints, no index on a column a claim or completion
--          writes (only the primary key), fillfactor 75: the upper bound of "state out of
--          every index predicate, transitions HOT";
--   hot50: the same at fillfactor 50;
--   fin:   an append-only table of finished jobs (completion = DELETE from cur + INSERT);
--   ready: a narrow claimable-entries table with the two claim orders.
DROP TABLE IF EXISTS lever.cur, lever.hot75, lever.hot50, lever.fin, lever.ready;
CREATE SCHEMA IF NOT EXISTS lever;
CREATE TABLE lever.cur (LIKE sluice.jobs INCLUDING ALL);
CREATE TABLE lever.hot75 (LIKE sluice.jobs INCLUDING DEFAULTS INCLUDING CONSTRAINTS) WITH (fillfactor = 75);
ALTER TABLE lever.hot75 ADD PRIMARY KEY (id);
CREATE TABLE lever.hot50 (LIKE sluice.jobs INCLUDING DEFAULTS INCLUDING CONSTRAINTS) WITH (fillfactor = 50);
ALTER TABLE lever.hot50 ADD PRIMARY KEY (id);
CREATE TABLE lever.fin (LIKE sluice.jobs INCLUDING DEFAULTS);
ALTER TABLE lever.fin ADD PRIMARY KEY (id);
CREATE INDEX fin_finished_idx ON lever.fin (state, finished_at);
CREATE TABLE lever.ready (id int8 PRIMARY KEY, tenant text NOT NULL, priority int2 NOT NULL, run_at timestamptz NOT NULL);
CREATE INDEX ready_claim_idx ON lever.ready (priority DESC, run_at, id);
CREATE INDEX ready_claim_tenant_idx ON lever.ready (tenant, priority DESC, run_at, id);
CREATE SEQUENCE IF NOT EXISTS lever.batch;
