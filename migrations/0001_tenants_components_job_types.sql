-- Sluice schema, part 1: the catalogue (tenants, uploaded components, job types).
-- Everything Sluice owns lives in the `sluice` schema so it can share a database with the
-- application that enqueues into it.
--
-- These tables are small and cold: foreign keys are fine here. The hot `jobs` table
-- (0002) deliberately has none.

CREATE SCHEMA IF NOT EXISTS sluice;

CREATE TABLE sluice.tenants (
    id                  text        PRIMARY KEY
                        CONSTRAINT tenants_id_slug CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    created_at          timestamptz NOT NULL DEFAULT now(),
    -- Tenant-wide caps. NULL means "the host default applies".
    -- Enforced by the store at enqueue time:
    max_payload_bytes   integer     CHECK (max_payload_bytes > 0),
    -- Enforced by the worker/sandbox (the store only keeps them):
    max_component_bytes bigint      CHECK (max_component_bytes > 0),
    max_timeout_ms      bigint      CHECK (max_timeout_ms > 0),
    max_fuel            bigint      CHECK (max_fuel > 0),
    max_memory_bytes    bigint      CHECK (max_memory_bytes > 0),
    max_output_bytes    bigint      CHECK (max_output_bytes > 0),
    max_log_bytes       bigint      CHECK (max_log_bytes > 0)
);

-- Uploaded Wasm components. The store does not validate the bytes (the sandbox does);
-- it stores them with their sha256. Rows are immutable: a new upload is a new version.
CREATE TABLE sluice.components (
    id          bigserial   PRIMARY KEY,
    tenant      text        NOT NULL REFERENCES sluice.tenants (id) ON DELETE CASCADE,
    name        text        NOT NULL CONSTRAINT components_name_length CHECK (char_length(name) BETWEEN 1 AND 128),
    version     text        NOT NULL CONSTRAINT components_version_length CHECK (char_length(version) BETWEEN 1 AND 64),
    sha256      text        NOT NULL CONSTRAINT components_sha256_hex CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    bytes       bytea       NOT NULL,
    size        bigint      NOT NULL GENERATED ALWAYS AS (octet_length(bytes)) STORED,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT components_tenant_name_version_key UNIQUE (tenant, name, version),
    -- Target of job_types' composite foreign key: a job type can only point at a
    -- component of its own tenant.
    CONSTRAINT components_tenant_id_key UNIQUE (tenant, id)
);

CREATE INDEX components_tenant_name_sha256_idx ON sluice.components (tenant, name, sha256);

-- What a job type runs and with which limits. NULL limit columns mean "host default"
-- (then capped by the tenant-wide caps above).
CREATE TABLE sluice.job_types (
    tenant          text        NOT NULL REFERENCES sluice.tenants (id) ON DELETE CASCADE,
    name            text        NOT NULL CONSTRAINT job_types_name_length CHECK (char_length(name) BETWEEN 1 AND 128),
    component_id    bigint      NOT NULL,
    max_attempts    integer     NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
    backoff_base_ms bigint      CHECK (backoff_base_ms >= 0),
    backoff_cap_ms  bigint      CHECK (backoff_cap_ms >= 0),
    backoff_jitter  double precision CHECK (backoff_jitter >= 0 AND backoff_jitter <= 1),
    timeout_ms      bigint      CHECK (timeout_ms > 0),
    fuel            bigint      CHECK (fuel > 0),
    memory_bytes    bigint      CHECK (memory_bytes > 0),
    output_bytes    bigint      CHECK (output_bytes > 0),
    log_bytes       bigint      CHECK (log_bytes > 0),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, name),
    CONSTRAINT job_types_component_fkey FOREIGN KEY (tenant, component_id)
        REFERENCES sluice.components (tenant, id)
);

CREATE INDEX job_types_component_idx ON sluice.job_types (component_id);
