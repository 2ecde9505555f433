-- Sluice schema, part 18: read-only API tokens (issue 20).
--
-- A read-only token (`sluice tenants token create ID --read-only`) authenticates like any
-- other, for its tenant (or, with admin, for any tenant), but the HTTP API refuses every
-- request that could change state (any method but GET and HEAD) with 403. Existing tokens
-- keep full rights.
--
-- Upgrading a live database: ADD COLUMN with a constant default (no rewrite).

ALTER TABLE sluice.api_tokens
    ADD COLUMN read_only boolean NOT NULL DEFAULT false;
