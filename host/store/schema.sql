-- GENERATED FILE: do not edit by hand.
--
-- The `sluice` schema after every migration in migrations/, read from the catalog of a
-- freshly migrated database by host/store/tests/it/schema_file.rs (not pg_dump). The
-- migrations are the source of truth; this file is what they add up to. A test fails
-- when it is out of date; regenerate it with
--
--   SLUICE_BLESS=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
--       cargo test -p sluice-store --test it schema_file
--
-- Sections: schema, enums, sequences, tables (columns in their physical order, then
-- constraints by name), indexes, views, functions, triggers, comments; each sorted by
-- name.

CREATE SCHEMA sluice;


-- Enums
-- -----
CREATE TYPE sluice.job_state AS ENUM ('pending', 'running', 'waiting', 'completed', 'dead', 'cancelled');
CREATE TYPE sluice.key_scope AS ENUM ('retained', 'unfinished');


-- Sequences
-- ---------
CREATE SEQUENCE sluice.api_tokens_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 NO CYCLE OWNED BY sluice.api_tokens.id;
CREATE SEQUENCE sluice.attempt_history_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 NO CYCLE OWNED BY sluice.attempt_history.id;
CREATE SEQUENCE sluice.components_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 NO CYCLE OWNED BY sluice.components.id;
CREATE SEQUENCE sluice.flow_keys_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 NO CYCLE OWNED BY sluice.flow_keys.id;
CREATE SEQUENCE sluice.jobs_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 NO CYCLE OWNED BY sluice.jobs.id;
CREATE SEQUENCE sluice.schedules_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 NO CYCLE OWNED BY sluice.schedules.id;
CREATE SEQUENCE sluice.signals_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 NO CYCLE OWNED BY sluice.signals.id;
CREATE SEQUENCE sluice.ui_sessions_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 NO CYCLE OWNED BY sluice.ui_sessions.id;
CREATE SEQUENCE sluice.webhook_endpoints_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 NO CYCLE OWNED BY sluice.webhook_endpoints.id;
CREATE SEQUENCE sluice.webhook_events_id_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 NO CYCLE OWNED BY sluice.webhook_events.id;


-- Tables
-- ------

CREATE TABLE sluice.api_tokens (
    id bigint DEFAULT nextval('sluice.api_tokens_id_seq'::regclass) NOT NULL,
    tenant text NOT NULL,
    token_hash bytea NOT NULL,
    admin boolean DEFAULT false NOT NULL,
    label text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    read_only boolean DEFAULT false NOT NULL,
    last_used_at timestamp with time zone,
    CONSTRAINT api_tokens_hash_length CHECK ((octet_length(token_hash) = 32)),
    CONSTRAINT api_tokens_label_length CHECK (((char_length(label) >= 1) AND (char_length(label) <= 128))),
    CONSTRAINT api_tokens_pkey PRIMARY KEY (id),
    CONSTRAINT api_tokens_tenant_fkey FOREIGN KEY (tenant) REFERENCES sluice.tenants(id) ON DELETE CASCADE,
    CONSTRAINT api_tokens_token_hash_key UNIQUE (token_hash)
);

CREATE TABLE sluice.attempt_history (
    id bigint DEFAULT nextval('sluice.attempt_history_id_seq'::regclass) NOT NULL,
    job_id bigint NOT NULL,
    attempt integer NOT NULL,
    lease_token uuid NOT NULL,
    worker text NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    outcome text,
    error text,
    fuel_used bigint,
    CONSTRAINT job_attempts_attempt_check CHECK ((attempt >= 1)),
    CONSTRAINT job_attempts_fuel_used_check CHECK ((fuel_used >= 0)),
    CONSTRAINT job_attempts_outcome_iff_finished CHECK (((outcome IS NULL) = (finished_at IS NULL))),
    CONSTRAINT job_attempts_outcome_known CHECK ((outcome = ANY (ARRAY['completed'::text, 'retry'::text, 'dead'::text, 'released'::text, 'lease_expired'::text, 'cancelled'::text, 'suspended'::text]))),
    CONSTRAINT job_attempts_pkey PRIMARY KEY (id)
) WITH (
    autovacuum_analyze_scale_factor=0.02,
    autovacuum_vacuum_insert_scale_factor=0.05,
    autovacuum_vacuum_scale_factor=0.02,
    fillfactor=90
);

CREATE TABLE sluice.attempt_logs (
    job_id bigint NOT NULL,
    attempt_id bigint NOT NULL,
    attempt integer NOT NULL,
    log bytea NOT NULL,
    dropped_bytes bigint DEFAULT 0 NOT NULL,
    CONSTRAINT attempt_logs_attempt_check CHECK ((attempt >= 1)),
    CONSTRAINT attempt_logs_dropped_bytes_check CHECK ((dropped_bytes >= 0)),
    CONSTRAINT attempt_logs_pkey PRIMARY KEY (job_id, attempt_id)
);

CREATE TABLE sluice.components (
    id bigint DEFAULT nextval('sluice.components_id_seq'::regclass) NOT NULL,
    tenant text NOT NULL,
    name text NOT NULL,
    version text NOT NULL,
    sha256 text NOT NULL,
    bytes bytea NOT NULL,
    size bigint GENERATED ALWAYS AS (octet_length(bytes)) STORED NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    contract smallint DEFAULT 1 NOT NULL,
    CONSTRAINT components_contract_range CHECK (((contract >= 1) AND (contract <= 99))),
    CONSTRAINT components_name_length CHECK (((char_length(name) >= 1) AND (char_length(name) <= 128))),
    CONSTRAINT components_pkey PRIMARY KEY (id),
    CONSTRAINT components_sha256_hex CHECK ((sha256 ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT components_tenant_fkey FOREIGN KEY (tenant) REFERENCES sluice.tenants(id) ON DELETE CASCADE,
    CONSTRAINT components_tenant_id_key UNIQUE (tenant, id),
    CONSTRAINT components_tenant_name_version_key UNIQUE (tenant, name, version),
    CONSTRAINT components_version_length CHECK (((char_length(version) >= 1) AND (char_length(version) <= 64)))
);

CREATE TABLE sluice.flow_keys (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    tenant text NOT NULL,
    job_type text NOT NULL,
    key text NOT NULL,
    running integer DEFAULT 0 NOT NULL,
    tokens double precision,
    refilled_at timestamp with time zone,
    ready_at timestamp with time zone,
    CONSTRAINT flow_keys_pkey PRIMARY KEY (id),
    CONSTRAINT flow_keys_running_check CHECK ((running >= 0)),
    CONSTRAINT flow_keys_tenant_fkey FOREIGN KEY (tenant) REFERENCES sluice.tenants(id) ON DELETE CASCADE,
    CONSTRAINT flow_keys_tenant_job_type_key_key UNIQUE (tenant, job_type, key)
);

CREATE TABLE sluice.follow_up_aliases (
    id bigint NOT NULL,
    parent_id bigint NOT NULL,
    parent_seq integer NOT NULL,
    job_id bigint NOT NULL,
    CONSTRAINT follow_up_aliases_parent_seq_check CHECK ((parent_seq >= 0)),
    CONSTRAINT follow_up_aliases_pkey PRIMARY KEY (id),
    CONSTRAINT follow_up_aliases_place_uidx UNIQUE (parent_id, parent_seq)
);

CREATE TABLE sluice.job_types (
    tenant text NOT NULL,
    name text NOT NULL,
    component_id bigint NOT NULL,
    max_attempts integer DEFAULT 3 NOT NULL,
    backoff_base_ms bigint,
    backoff_cap_ms bigint,
    backoff_jitter double precision,
    timeout_ms bigint,
    fuel bigint,
    memory_bytes bigint,
    output_bytes bigint,
    log_bytes bigint,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    http_allow text[] DEFAULT '{}'::text[] NOT NULL,
    http_max_requests integer,
    http_request_bytes bigint,
    http_response_bytes bigint,
    http_connect_timeout_ms bigint,
    http_first_byte_timeout_ms bigint,
    http_between_bytes_timeout_ms bigint,
    secrets text[] DEFAULT '{}'::text[] NOT NULL,
    durable boolean DEFAULT false NOT NULL,
    journal_bytes bigint,
    paused boolean DEFAULT false NOT NULL,
    max_running integer,
    max_running_per_key integer,
    rate_count integer,
    rate_period_ms bigint,
    key_rate_count integer,
    key_rate_period_ms bigint,
    rate_tokens double precision,
    rate_refilled_at timestamp with time zone,
    flow boolean GENERATED ALWAYS AS ((paused OR (max_running IS NOT NULL) OR (rate_count IS NOT NULL))) STORED,
    max_snoozes integer,
    CONSTRAINT job_types_backoff_base_ms_check CHECK ((backoff_base_ms >= 0)),
    CONSTRAINT job_types_backoff_cap_ms_check CHECK ((backoff_cap_ms >= 0)),
    CONSTRAINT job_types_backoff_jitter_check CHECK (((backoff_jitter >= (0)::double precision) AND (backoff_jitter <= (1)::double precision))),
    CONSTRAINT job_types_component_fkey FOREIGN KEY (tenant, component_id) REFERENCES sluice.components(tenant, id),
    CONSTRAINT job_types_fuel_check CHECK ((fuel > 0)),
    CONSTRAINT job_types_http_allow_size CHECK (((cardinality(http_allow) <= 64) AND (array_position(http_allow, NULL::text) IS NULL))),
    CONSTRAINT job_types_http_max_requests_check CHECK ((http_max_requests >= 0)),
    CONSTRAINT job_types_http_request_bytes_check CHECK ((http_request_bytes > 0)),
    CONSTRAINT job_types_http_response_bytes_check CHECK ((http_response_bytes > 0)),
    CONSTRAINT job_types_http_timeouts_check CHECK (((http_connect_timeout_ms > 0) AND (http_first_byte_timeout_ms > 0) AND (http_between_bytes_timeout_ms > 0))),
    CONSTRAINT job_types_journal_bytes_check CHECK ((journal_bytes > 0)),
    CONSTRAINT job_types_key_rate_count_check CHECK ((key_rate_count > 0)),
    CONSTRAINT job_types_key_rate_period_ms_check CHECK ((key_rate_period_ms > 0)),
    CONSTRAINT job_types_key_rate_whole CHECK (((key_rate_count IS NULL) = (key_rate_period_ms IS NULL))),
    CONSTRAINT job_types_log_bytes_check CHECK ((log_bytes > 0)),
    CONSTRAINT job_types_max_attempts_check CHECK ((max_attempts >= 1)),
    CONSTRAINT job_types_max_running_check CHECK ((max_running > 0)),
    CONSTRAINT job_types_max_running_per_key_check CHECK ((max_running_per_key > 0)),
    CONSTRAINT job_types_max_snoozes_check CHECK ((max_snoozes >= 0)),
    CONSTRAINT job_types_memory_bytes_check CHECK ((memory_bytes > 0)),
    CONSTRAINT job_types_name_length CHECK (((char_length(name) >= 1) AND (char_length(name) <= 128))),
    CONSTRAINT job_types_output_bytes_check CHECK ((output_bytes > 0)),
    CONSTRAINT job_types_pkey PRIMARY KEY (tenant, name),
    CONSTRAINT job_types_rate_count_check CHECK ((rate_count > 0)),
    CONSTRAINT job_types_rate_period_ms_check CHECK ((rate_period_ms > 0)),
    CONSTRAINT job_types_rate_whole CHECK (((rate_count IS NULL) = (rate_period_ms IS NULL))),
    CONSTRAINT job_types_secrets_size CHECK (((cardinality(secrets) <= 64) AND (array_position(secrets, NULL::text) IS NULL))),
    CONSTRAINT job_types_tenant_fkey FOREIGN KEY (tenant) REFERENCES sluice.tenants(id) ON DELETE CASCADE,
    CONSTRAINT job_types_timeout_ms_nonnegative CHECK ((timeout_ms >= 0))
);

CREATE TABLE sluice.jobs (
    id bigint DEFAULT nextval('sluice.jobs_id_seq'::regclass) NOT NULL,
    tenant text NOT NULL,
    job_type text NOT NULL,
    payload bytea NOT NULL,
    priority smallint DEFAULT 0 NOT NULL,
    state sluice.job_state DEFAULT 'pending'::sluice.job_state NOT NULL,
    run_at timestamp with time zone DEFAULT now() NOT NULL,
    attempt integer DEFAULT 0 NOT NULL,
    max_attempts integer NOT NULL,
    idempotency_key text,
    key_scope sluice.key_scope DEFAULT 'retained'::sluice.key_scope NOT NULL,
    locked_by text,
    locked_until timestamp with time zone,
    lease_token uuid,
    cancel_requested boolean DEFAULT false NOT NULL,
    last_error text,
    output bytea,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    attempt_id bigint,
    attempt_started_at timestamp with time zone,
    attempt_worker text,
    attempt_fuel bigint,
    parent_id bigint,
    parent_seq integer,
    flow_key text,
    waiting_for text,
    awaited bigint[],
    snoozes integer DEFAULT 0 NOT NULL,
    watched boolean DEFAULT false NOT NULL,
    traceparent text,
    tracestate text,
    CONSTRAINT jobs_attempt_fuel_nonnegative CHECK ((attempt_fuel >= 0)),
    CONSTRAINT jobs_attempt_on_row CHECK ((((attempt_id IS NULL) = (attempt_started_at IS NULL)) AND ((attempt_id IS NULL) = (attempt_worker IS NULL)) AND
CASE state
    WHEN 'running'::sluice.job_state THEN (attempt_id IS NOT NULL)
    WHEN 'completed'::sluice.job_state THEN true
    ELSE (attempt_id IS NULL)
END)),
    CONSTRAINT jobs_attempt_range CHECK (((attempt >= 0) AND (attempt <= max_attempts))),
    CONSTRAINT jobs_awaited_no_nulls CHECK ((array_position(awaited, NULL::bigint) IS NULL)),
    CONSTRAINT jobs_cancel_requested_only_running CHECK (((NOT cancel_requested) OR (state = 'running'::sluice.job_state))),
    CONSTRAINT jobs_finished_at_iff_terminal CHECK (((finished_at IS NOT NULL) = (state = ANY (ARRAY['completed'::sluice.job_state, 'dead'::sluice.job_state, 'cancelled'::sluice.job_state])))),
    CONSTRAINT jobs_flow_key_length CHECK ((char_length(flow_key) <= 255)),
    CONSTRAINT jobs_idempotency_key_length CHECK (((char_length(idempotency_key) >= 1) AND (char_length(idempotency_key) <= 255))),
    CONSTRAINT jobs_job_type_length CHECK (((char_length(job_type) >= 1) AND (char_length(job_type) <= 128))),
    CONSTRAINT jobs_lease_iff_running CHECK ((((state = 'running'::sluice.job_state) = (locked_by IS NOT NULL)) AND ((state = 'running'::sluice.job_state) = (locked_until IS NOT NULL)) AND ((state = 'running'::sluice.job_state) = (lease_token IS NOT NULL)) AND ((state <> 'running'::sluice.job_state) OR (attempt >= 1)))),
    CONSTRAINT jobs_max_attempts_positive CHECK ((max_attempts >= 1)),
    CONSTRAINT jobs_parent_pair CHECK (((parent_id IS NULL) = (parent_seq IS NULL))),
    CONSTRAINT jobs_parent_seq_nonnegative CHECK ((parent_seq >= 0)),
    CONSTRAINT jobs_pending_has_attempt_left CHECK (((state <> 'pending'::sluice.job_state) OR (attempt < max_attempts))),
    CONSTRAINT jobs_pkey PRIMARY KEY (id),
    CONSTRAINT jobs_run_at_range CHECK (((run_at >= '1970-01-01 00:00:00+00'::timestamp with time zone) AND (run_at <= '9999-12-31 23:59:59.999999+00'::timestamp with time zone))),
    CONSTRAINT jobs_snoozes_nonnegative CHECK ((snoozes >= 0)),
    CONSTRAINT jobs_wait_only_waiting CHECK (((state = 'waiting'::sluice.job_state) OR ((waiting_for IS NULL) AND (awaited IS NULL)))),
    CONSTRAINT jobs_waiting_for_length CHECK (((char_length(waiting_for) >= 1) AND (char_length(waiting_for) <= 128)))
) WITH (
    autovacuum_analyze_scale_factor=0.02,
    autovacuum_vacuum_cost_delay=1,
    autovacuum_vacuum_insert_scale_factor=0.05,
    autovacuum_vacuum_scale_factor=0.01,
    autovacuum_vacuum_threshold=1000,
    fillfactor=75
);

CREATE TABLE sluice.journal (
    job_id bigint NOT NULL,
    seq integer NOT NULL,
    kind text NOT NULL,
    request text NOT NULL,
    summary text NOT NULL,
    result bytea NOT NULL,
    attempt integer NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT journal_pkey PRIMARY KEY (job_id, seq),
    CONSTRAINT journal_seq_check CHECK ((seq >= 0))
);

CREATE TABLE sluice.journal_heads (
    job_id bigint NOT NULL,
    component_id bigint NOT NULL,
    entries integer NOT NULL,
    bytes bigint NOT NULL,
    CONSTRAINT journal_heads_bytes_check CHECK ((bytes >= 0)),
    CONSTRAINT journal_heads_entries_check CHECK ((entries >= 0)),
    CONSTRAINT journal_heads_pkey PRIMARY KEY (job_id)
);

CREATE TABLE sluice.maintenance_runs (
    task text NOT NULL,
    last_started_at timestamp with time zone NOT NULL,
    last_finished_at timestamp with time zone,
    last_deleted bigint,
    started_by text,
    CONSTRAINT maintenance_runs_pkey PRIMARY KEY (task)
);

CREATE TABLE sluice.schedule_slots (
    schedule_id bigint NOT NULL,
    slot timestamp with time zone NOT NULL,
    job_id bigint NOT NULL,
    fired_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT schedule_slots_pkey PRIMARY KEY (schedule_id, slot),
    CONSTRAINT schedule_slots_schedule_id_fkey FOREIGN KEY (schedule_id) REFERENCES sluice.schedules(id) ON DELETE CASCADE
);

CREATE TABLE sluice.schedules (
    id bigint DEFAULT nextval('sluice.schedules_id_seq'::regclass) NOT NULL,
    tenant text NOT NULL,
    name text NOT NULL,
    cron text NOT NULL,
    tz text DEFAULT 'UTC'::text NOT NULL,
    job_type text NOT NULL,
    payload bytea NOT NULL,
    priority smallint DEFAULT 10 NOT NULL,
    max_attempts integer,
    jitter_ms bigint DEFAULT 0 NOT NULL,
    catch_up text DEFAULT 'latest'::text NOT NULL,
    max_catch_up integer DEFAULT 10 NOT NULL,
    paused boolean DEFAULT false NOT NULL,
    next_slot timestamp with time zone,
    last_fired_slot timestamp with time zone,
    fired_count bigint DEFAULT 0 NOT NULL,
    skipped_count bigint DEFAULT 0 NOT NULL,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT schedules_catch_up_known CHECK ((catch_up = ANY (ARRAY['none'::text, 'latest'::text, 'all'::text]))),
    CONSTRAINT schedules_cron_length CHECK (((char_length(cron) >= 1) AND (char_length(cron) <= 256))),
    CONSTRAINT schedules_jitter_non_negative CHECK ((jitter_ms >= 0)),
    CONSTRAINT schedules_job_type_length CHECK (((char_length(job_type) >= 1) AND (char_length(job_type) <= 128))),
    CONSTRAINT schedules_max_attempts_positive CHECK ((max_attempts >= 1)),
    CONSTRAINT schedules_max_catch_up_positive CHECK ((max_catch_up >= 1)),
    CONSTRAINT schedules_name_length CHECK (((char_length(name) >= 1) AND (char_length(name) <= 128))),
    CONSTRAINT schedules_pkey PRIMARY KEY (id),
    CONSTRAINT schedules_tenant_fkey FOREIGN KEY (tenant) REFERENCES sluice.tenants(id) ON DELETE CASCADE,
    CONSTRAINT schedules_tenant_name_key UNIQUE (tenant, name)
);

CREATE TABLE sluice.secrets (
    tenant text NOT NULL,
    name text NOT NULL,
    key_id text NOT NULL,
    nonce bytea NOT NULL,
    ciphertext bytea NOT NULL,
    size integer NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT secrets_ciphertext_length CHECK ((octet_length(ciphertext) = (size + 16))),
    CONSTRAINT secrets_key_id_hex CHECK ((key_id ~ '^[0-9a-f]{16}$'::text)),
    CONSTRAINT secrets_name_syntax CHECK ((name ~ '^[A-Za-z_][A-Za-z0-9_]{0,127}$'::text)),
    CONSTRAINT secrets_nonce_length CHECK ((octet_length(nonce) = 12)),
    CONSTRAINT secrets_pkey PRIMARY KEY (tenant, name),
    CONSTRAINT secrets_size_range CHECK (((size >= 0) AND (size <= 65536))),
    CONSTRAINT secrets_tenant_fkey FOREIGN KEY (tenant) REFERENCES sluice.tenants(id) ON DELETE CASCADE
);

CREATE TABLE sluice.signals (
    id bigint DEFAULT nextval('sluice.signals_id_seq'::regclass) NOT NULL,
    job_id bigint NOT NULL,
    name text NOT NULL,
    payload jsonb,
    sent_at timestamp with time zone DEFAULT now() NOT NULL,
    consumed_seq integer,
    CONSTRAINT signals_consumed_seq_check CHECK ((consumed_seq >= 0)),
    CONSTRAINT signals_name_length CHECK (((char_length(name) >= 1) AND (char_length(name) <= 128))),
    CONSTRAINT signals_pkey PRIMARY KEY (id)
);

CREATE TABLE sluice.tenants (
    id text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    max_payload_bytes integer,
    max_component_bytes bigint,
    max_timeout_ms bigint,
    max_fuel bigint,
    max_memory_bytes bigint,
    max_output_bytes bigint,
    max_log_bytes bigint,
    max_enqueue_per_sec double precision,
    enqueue_burst integer,
    max_running integer,
    egress_allow text[],
    max_http_requests integer,
    max_http_request_bytes bigint,
    max_http_response_bytes bigint,
    max_follow_ups integer,
    max_follow_up_bytes bigint,
    paused boolean DEFAULT false NOT NULL,
    max_journal_bytes bigint,
    max_attempts_per_day bigint,
    max_fuel_per_day bigint,
    max_egress_bytes_per_day bigint,
    quota boolean GENERATED ALWAYS AS (((max_attempts_per_day IS NOT NULL) OR (max_fuel_per_day IS NOT NULL) OR (max_egress_bytes_per_day IS NOT NULL))) STORED,
    quota_day date,
    day_attempts bigint DEFAULT 0 NOT NULL,
    CONSTRAINT tenants_egress_allow_size CHECK (((cardinality(egress_allow) <= 64) AND (array_position(egress_allow, NULL::text) IS NULL))),
    CONSTRAINT tenants_enqueue_burst_positive CHECK ((enqueue_burst > 0)),
    CONSTRAINT tenants_id_slug CHECK ((id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'::text)),
    CONSTRAINT tenants_max_attempts_per_day_check CHECK ((max_attempts_per_day > 0)),
    CONSTRAINT tenants_max_component_bytes_check CHECK ((max_component_bytes > 0)),
    CONSTRAINT tenants_max_egress_bytes_per_day_check CHECK ((max_egress_bytes_per_day > 0)),
    CONSTRAINT tenants_max_enqueue_per_sec_positive CHECK ((max_enqueue_per_sec > (0)::double precision)),
    CONSTRAINT tenants_max_follow_up_bytes_check CHECK ((max_follow_up_bytes > 0)),
    CONSTRAINT tenants_max_follow_ups_check CHECK ((max_follow_ups >= 0)),
    CONSTRAINT tenants_max_fuel_check CHECK ((max_fuel > 0)),
    CONSTRAINT tenants_max_fuel_per_day_check CHECK ((max_fuel_per_day > 0)),
    CONSTRAINT tenants_max_http_request_bytes_check CHECK ((max_http_request_bytes > 0)),
    CONSTRAINT tenants_max_http_requests_check CHECK ((max_http_requests >= 0)),
    CONSTRAINT tenants_max_http_response_bytes_check CHECK ((max_http_response_bytes > 0)),
    CONSTRAINT tenants_max_journal_bytes_check CHECK ((max_journal_bytes > 0)),
    CONSTRAINT tenants_max_log_bytes_check CHECK ((max_log_bytes > 0)),
    CONSTRAINT tenants_max_memory_bytes_check CHECK ((max_memory_bytes > 0)),
    CONSTRAINT tenants_max_output_bytes_check CHECK ((max_output_bytes > 0)),
    CONSTRAINT tenants_max_payload_bytes_check CHECK ((max_payload_bytes > 0)),
    CONSTRAINT tenants_max_running_positive CHECK (((max_running IS NULL) OR (max_running >= 1))),
    CONSTRAINT tenants_max_timeout_ms_check CHECK ((max_timeout_ms > 0)),
    CONSTRAINT tenants_pkey PRIMARY KEY (id)
);

CREATE TABLE sluice.ui_sessions (
    id bigint DEFAULT nextval('sluice.ui_sessions_id_seq'::regclass) NOT NULL,
    secret_hash bytea NOT NULL,
    token_id bigint,
    env_admin_hash bytea,
    home_tenant text NOT NULL,
    acting_tenant text NOT NULL,
    admin boolean NOT NULL,
    read_only boolean NOT NULL,
    csrf_token text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT ui_sessions_acting_tenant_fkey FOREIGN KEY (acting_tenant) REFERENCES sluice.tenants(id) ON DELETE CASCADE,
    CONSTRAINT ui_sessions_csrf_token_length CHECK (((char_length(csrf_token) >= 32) AND (char_length(csrf_token) <= 128))),
    CONSTRAINT ui_sessions_env_admin_hash_length CHECK ((octet_length(env_admin_hash) = 32)),
    CONSTRAINT ui_sessions_home_tenant_fkey FOREIGN KEY (home_tenant) REFERENCES sluice.tenants(id) ON DELETE CASCADE,
    CONSTRAINT ui_sessions_one_source CHECK (((token_id IS NULL) <> (env_admin_hash IS NULL))),
    CONSTRAINT ui_sessions_pkey PRIMARY KEY (id),
    CONSTRAINT ui_sessions_secret_hash_key UNIQUE (secret_hash),
    CONSTRAINT ui_sessions_secret_hash_length CHECK ((octet_length(secret_hash) = 32)),
    CONSTRAINT ui_sessions_tenant_switch_admin_only CHECK ((admin OR (acting_tenant = home_tenant))),
    CONSTRAINT ui_sessions_token_id_fkey FOREIGN KEY (token_id) REFERENCES sluice.api_tokens(id) ON DELETE CASCADE
);

CREATE TABLE sluice.usage_hourly (
    tenant text NOT NULL,
    hour timestamp with time zone NOT NULL,
    job_type text NOT NULL,
    runs bigint DEFAULT 0 NOT NULL,
    fuel bigint DEFAULT 0 NOT NULL,
    wall_ms bigint DEFAULT 0 NOT NULL,
    peak_memory_bytes bigint DEFAULT 0 NOT NULL,
    http_requests bigint DEFAULT 0 NOT NULL,
    http_bytes_out bigint DEFAULT 0 NOT NULL,
    http_bytes_in bigint DEFAULT 0 NOT NULL,
    payload_bytes bigint DEFAULT 0 NOT NULL,
    output_bytes bigint DEFAULT 0 NOT NULL,
    log_bytes bigint DEFAULT 0 NOT NULL,
    CONSTRAINT usage_hourly_pkey PRIMARY KEY (tenant, hour, job_type)
);

CREATE TABLE sluice.webhook_endpoints (
    id bigint DEFAULT nextval('sluice.webhook_endpoints_id_seq'::regclass) NOT NULL,
    tenant text NOT NULL,
    url text NOT NULL,
    events text[] NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    enabled boolean DEFAULT true NOT NULL,
    disabled_reason text,
    key_id text NOT NULL,
    nonce bytea NOT NULL,
    ciphertext bytea NOT NULL,
    previous_key_id text,
    previous_nonce bytea,
    previous_ciphertext bytea,
    previous_until timestamp with time zone,
    retry_schedule_ms bigint[],
    timeout_ms integer DEFAULT 15000 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT webhook_endpoints_description_length CHECK ((char_length(description) <= 1024)),
    CONSTRAINT webhook_endpoints_events_size CHECK ((((cardinality(events) >= 1) AND (cardinality(events) <= 64)) AND (array_position(events, NULL::text) IS NULL))),
    CONSTRAINT webhook_endpoints_key_id_hex CHECK ((key_id ~ '^[0-9a-f]{16}$'::text)),
    CONSTRAINT webhook_endpoints_nonce_length CHECK ((octet_length(nonce) = 12)),
    CONSTRAINT webhook_endpoints_pkey PRIMARY KEY (id),
    CONSTRAINT webhook_endpoints_previous_complete CHECK ((((previous_key_id IS NULL) = (previous_nonce IS NULL)) AND ((previous_key_id IS NULL) = (previous_ciphertext IS NULL)) AND ((previous_key_id IS NULL) = (previous_until IS NULL)))),
    CONSTRAINT webhook_endpoints_previous_key_id_hex CHECK ((previous_key_id ~ '^[0-9a-f]{16}$'::text)),
    CONSTRAINT webhook_endpoints_retry_schedule CHECK ((((cardinality(retry_schedule_ms) >= 0) AND (cardinality(retry_schedule_ms) <= 20)) AND (array_position(retry_schedule_ms, NULL::bigint) IS NULL))),
    CONSTRAINT webhook_endpoints_tenant_fkey FOREIGN KEY (tenant) REFERENCES sluice.tenants(id) ON DELETE CASCADE,
    CONSTRAINT webhook_endpoints_timeout_range CHECK (((timeout_ms >= 100) AND (timeout_ms <= 300000))),
    CONSTRAINT webhook_endpoints_url_length CHECK (((char_length(url) >= 1) AND (char_length(url) <= 2048)))
);

CREATE TABLE sluice.webhook_events (
    id bigint DEFAULT nextval('sluice.webhook_events_id_seq'::regclass) NOT NULL,
    tenant text NOT NULL,
    event_type text NOT NULL,
    body bytea NOT NULL,
    idempotency_key text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    traceparent text,
    tracestate text,
    CONSTRAINT webhook_events_idempotency_key_length CHECK (((char_length(idempotency_key) >= 1) AND (char_length(idempotency_key) <= 255))),
    CONSTRAINT webhook_events_pkey PRIMARY KEY (id),
    CONSTRAINT webhook_events_tenant_fkey FOREIGN KEY (tenant) REFERENCES sluice.tenants(id) ON DELETE CASCADE,
    CONSTRAINT webhook_events_tenant_key UNIQUE (tenant, idempotency_key),
    CONSTRAINT webhook_events_type_syntax CHECK ((event_type ~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$'::text))
);

CREATE TABLE sluice.workers (
    id text NOT NULL,
    kind text NOT NULL,
    session uuid NOT NULL,
    hostname text NOT NULL,
    pid integer NOT NULL,
    version text NOT NULL,
    contracts text[] NOT NULL,
    concurrency integer,
    lease_us bigint NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    last_heartbeat timestamp with time zone DEFAULT now() NOT NULL,
    stopped_at timestamp with time zone,
    CONSTRAINT workers_concurrency_check CHECK ((concurrency > 0)),
    CONSTRAINT workers_id_check CHECK ((id <> ''::text)),
    CONSTRAINT workers_kind_check CHECK ((kind = ANY (ARRAY['worker'::text, 'scheduler'::text]))),
    CONSTRAINT workers_lease_us_check CHECK ((lease_us > 0)),
    CONSTRAINT workers_pid_check CHECK ((pid >= 0)),
    CONSTRAINT workers_pkey PRIMARY KEY (id)
);


-- Indexes (including those behind PRIMARY KEY and UNIQUE)
-- -------------------------------------------------------
CREATE UNIQUE INDEX api_tokens_pkey ON sluice.api_tokens USING btree (id);
CREATE INDEX api_tokens_tenant_idx ON sluice.api_tokens USING btree (tenant, id);
CREATE UNIQUE INDEX api_tokens_token_hash_key ON sluice.api_tokens USING btree (token_hash);
CREATE INDEX attempt_history_failed_idx ON sluice.attempt_history USING btree (finished_at) WHERE (outcome = ANY (ARRAY['retry'::text, 'dead'::text, 'lease_expired'::text]));
CREATE INDEX job_attempts_job_id_idx ON sluice.attempt_history USING btree (job_id, id);
CREATE UNIQUE INDEX job_attempts_pkey ON sluice.attempt_history USING btree (id);
CREATE UNIQUE INDEX attempt_logs_pkey ON sluice.attempt_logs USING btree (job_id, attempt_id);
CREATE INDEX components_contract_idx ON sluice.components USING btree (contract);
CREATE UNIQUE INDEX components_pkey ON sluice.components USING btree (id);
CREATE UNIQUE INDEX components_tenant_id_key ON sluice.components USING btree (tenant, id);
CREATE INDEX components_tenant_name_sha256_idx ON sluice.components USING btree (tenant, name, sha256);
CREATE UNIQUE INDEX components_tenant_name_version_key ON sluice.components USING btree (tenant, name, version);
CREATE INDEX flow_keys_due_idx ON sluice.flow_keys USING btree (ready_at) WHERE (ready_at IS NOT NULL);
CREATE UNIQUE INDEX flow_keys_pkey ON sluice.flow_keys USING btree (id);
CREATE INDEX flow_keys_ready_idx ON sluice.flow_keys USING btree (tenant, job_type, ready_at) WHERE (ready_at IS NOT NULL);
CREATE UNIQUE INDEX flow_keys_tenant_job_type_key_key ON sluice.flow_keys USING btree (tenant, job_type, key);
CREATE INDEX follow_up_aliases_job_idx ON sluice.follow_up_aliases USING btree (job_id);
CREATE UNIQUE INDEX follow_up_aliases_pkey ON sluice.follow_up_aliases USING btree (id);
CREATE UNIQUE INDEX follow_up_aliases_place_uidx ON sluice.follow_up_aliases USING btree (parent_id, parent_seq);
CREATE INDEX job_types_component_idx ON sluice.job_types USING btree (component_id);
CREATE INDEX job_types_flow_idx ON sluice.job_types USING btree (tenant, name) WHERE flow;
CREATE INDEX job_types_paused_idx ON sluice.job_types USING btree (tenant, name) WHERE paused;
CREATE UNIQUE INDEX job_types_pkey ON sluice.job_types USING btree (tenant, name);
CREATE INDEX job_types_secrets_idx ON sluice.job_types USING btree (tenant) WHERE (cardinality(secrets) > 0);
CREATE INDEX jobs_claim_tenant_idx ON sluice.jobs USING btree (tenant, priority DESC, run_at, id) WHERE ((state = 'pending'::sluice.job_state) AND (flow_key IS NULL));
CREATE INDEX jobs_finished_idx ON sluice.jobs USING btree (state, finished_at) WHERE (state = ANY (ARRAY['completed'::sluice.job_state, 'dead'::sluice.job_state, 'cancelled'::sluice.job_state]));
CREATE INDEX jobs_flow_idx ON sluice.jobs USING btree (tenant, job_type, flow_key, priority DESC, run_at, id) WHERE ((state = 'pending'::sluice.job_state) AND (flow_key IS NOT NULL));
CREATE UNIQUE INDEX jobs_idempotency_key_uidx ON sluice.jobs USING btree (tenant, idempotency_key) WHERE ((idempotency_key IS NOT NULL) AND ((key_scope = 'retained'::sluice.key_scope) OR (state = ANY (ARRAY['pending'::sluice.job_state, 'running'::sluice.job_state, 'waiting'::sluice.job_state]))));
CREATE UNIQUE INDEX jobs_parent_uidx ON sluice.jobs USING btree (parent_id, parent_seq) WHERE (parent_id IS NOT NULL);
CREATE UNIQUE INDEX jobs_pkey ON sluice.jobs USING btree (id);
CREATE INDEX jobs_running_idx ON sluice.jobs USING btree (tenant, locked_until) WHERE (state = 'running'::sluice.job_state);
CREATE INDEX jobs_waiting_idx ON sluice.jobs USING btree (run_at) WHERE (state = 'waiting'::sluice.job_state);
CREATE UNIQUE INDEX journal_pkey ON sluice.journal USING btree (job_id, seq);
CREATE UNIQUE INDEX journal_heads_pkey ON sluice.journal_heads USING btree (job_id);
CREATE UNIQUE INDEX maintenance_runs_pkey ON sluice.maintenance_runs USING btree (task);
CREATE INDEX schedule_slots_fired_at_idx ON sluice.schedule_slots USING btree (fired_at);
CREATE UNIQUE INDEX schedule_slots_pkey ON sluice.schedule_slots USING btree (schedule_id, slot);
CREATE INDEX schedules_due_idx ON sluice.schedules USING btree (next_slot) WHERE (NOT paused);
CREATE UNIQUE INDEX schedules_pkey ON sluice.schedules USING btree (id);
CREATE UNIQUE INDEX schedules_tenant_name_key ON sluice.schedules USING btree (tenant, name);
CREATE INDEX secrets_key_id_idx ON sluice.secrets USING btree (key_id);
CREATE UNIQUE INDEX secrets_pkey ON sluice.secrets USING btree (tenant, name);
CREATE INDEX signals_job_idx ON sluice.signals USING btree (job_id, name, id);
CREATE UNIQUE INDEX signals_pkey ON sluice.signals USING btree (id);
CREATE INDEX tenants_paused_idx ON sluice.tenants USING btree (id) WHERE paused;
CREATE UNIQUE INDEX tenants_pkey ON sluice.tenants USING btree (id);
CREATE INDEX tenants_quota_idx ON sluice.tenants USING btree (id) WHERE quota;
CREATE INDEX ui_sessions_expires_at_idx ON sluice.ui_sessions USING btree (expires_at);
CREATE UNIQUE INDEX ui_sessions_pkey ON sluice.ui_sessions USING btree (id);
CREATE UNIQUE INDEX ui_sessions_secret_hash_key ON sluice.ui_sessions USING btree (secret_hash);
CREATE INDEX ui_sessions_token_id_idx ON sluice.ui_sessions USING btree (token_id) WHERE (token_id IS NOT NULL);
CREATE INDEX usage_hourly_hour_idx ON sluice.usage_hourly USING btree (hour);
CREATE UNIQUE INDEX usage_hourly_pkey ON sluice.usage_hourly USING btree (tenant, hour, job_type);
CREATE INDEX webhook_endpoints_key_id_idx ON sluice.webhook_endpoints USING btree (key_id);
CREATE UNIQUE INDEX webhook_endpoints_pkey ON sluice.webhook_endpoints USING btree (id);
CREATE INDEX webhook_endpoints_previous_key_id_idx ON sluice.webhook_endpoints USING btree (previous_key_id) WHERE (previous_key_id IS NOT NULL);
CREATE INDEX webhook_endpoints_tenant_idx ON sluice.webhook_endpoints USING btree (tenant, id);
CREATE INDEX webhook_events_created_idx ON sluice.webhook_events USING btree (created_at);
CREATE UNIQUE INDEX webhook_events_pkey ON sluice.webhook_events USING btree (id);
CREATE UNIQUE INDEX webhook_events_tenant_key ON sluice.webhook_events USING btree (tenant, idempotency_key);
CREATE UNIQUE INDEX workers_pkey ON sluice.workers USING btree (id);


-- Views
-- -----

CREATE VIEW sluice.job_attempts AS
 SELECT h.id,
    h.job_id,
    h.attempt,
    h.lease_token,
    h.worker,
    h.started_at,
    h.finished_at,
    h.outcome,
    h.error,
    h.fuel_used
   FROM sluice.attempt_history h
UNION ALL
 SELECT j.attempt_id AS id,
    j.id AS job_id,
    j.attempt,
    j.lease_token,
    j.attempt_worker AS worker,
    j.attempt_started_at AS started_at,
        CASE
            WHEN j.state = 'completed'::sluice.job_state THEN j.finished_at
            ELSE NULL::timestamp with time zone
        END AS finished_at,
        CASE
            WHEN j.state = 'completed'::sluice.job_state THEN 'completed'::text
            ELSE NULL::text
        END AS outcome,
    NULL::text AS error,
    j.attempt_fuel AS fuel_used
   FROM sluice.jobs j
  WHERE j.attempt_id IS NOT NULL;


-- Functions
-- ---------

CREATE OR REPLACE FUNCTION sluice.claim(p_worker text, p_limit integer, p_lease_us bigint, p_tenants text[], p_job_types text[])
 RETURNS TABLE(id bigint, tenant text, job_type text, payload bytea, priority integer, attempt integer, max_attempts integer, lease_token uuid, locked_until timestamp with time zone)
 LANGUAGE sql
AS $function$
    SELECT * FROM sluice.claim(p_worker, p_limit, p_lease_us, p_tenants, p_job_types, 1::smallint)
$function$;

CREATE OR REPLACE FUNCTION sluice.claim(p_worker text, p_limit integer, p_lease_us bigint, p_tenants text[], p_job_types text[], p_max_contract smallint)
 RETURNS TABLE(id bigint, tenant text, job_type text, payload bytea, priority integer, attempt integer, max_attempts integer, lease_token uuid, locked_until timestamp with time zone)
 LANGUAGE sql
AS $function$
    SELECT * FROM sluice.claim(p_worker, p_limit, p_lease_us, p_tenants, p_job_types,
                               p_max_contract, '{}'::text[])
$function$;

CREATE OR REPLACE FUNCTION sluice.claim(p_worker text, p_limit integer, p_lease_us bigint, p_tenants text[], p_job_types text[], p_max_contract smallint, p_secret_keys text[])
 RETURNS TABLE(id bigint, tenant text, job_type text, payload bytea, priority integer, attempt integer, max_attempts integer, lease_token uuid, locked_until timestamp with time zone)
 LANGUAGE sql
AS $function$
    SELECT c.id, c.tenant, c.job_type, c.payload, c.priority, c.attempt, c.max_attempts,
           c.lease_token, c.locked_until
    FROM sluice.claim(p_worker, p_limit, p_lease_us, p_tenants, p_job_types,
                      p_max_contract, p_secret_keys, NULL::text[]) c;
$function$;

CREATE OR REPLACE FUNCTION sluice.claim(p_worker text, p_limit integer, p_lease_us bigint, p_tenants text[], p_job_types text[], p_max_contract smallint, p_secret_keys text[], p_skip_tenants text[])
 RETURNS TABLE(id bigint, tenant text, job_type text, payload bytea, priority integer, attempt integer, max_attempts integer, lease_token uuid, locked_until timestamp with time zone, traceparent text, tracestate text, due_at timestamp with time zone)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_bitmapscan TO 'off'
 SET enable_seqscan TO 'off'
 SET jit TO 'off'
AS $function$
#variable_conflict use_column
DECLARE
    -- The job types (tenant/name; a tenant id holds no `/`) this host must leave pending:
    -- those whose component targets a newer contract than it runs (for a newer host),
    -- those granted secrets it cannot decrypt -- it holds no key (p_secret_keys empty),
    -- or a granted secret of the type's tenant is stored under a key id it does not hold
    -- -- and the webhook deliveries (tenant/sluice.webhook) of tenants with an endpoint
    -- whose signing secret it cannot open (migration 0022). Found by the
    -- components_contract_idx, job_types_secrets_idx and webhook_endpoints key id
    -- probes, empty (and free) when every host is current and holds the keys.
    v_skip text[] := ARRAY(
        SELECT jt.tenant || '/' || jt.name
        FROM sluice.components co
        JOIN sluice.job_types jt ON jt.component_id = co.id
        WHERE co.contract > p_max_contract
        UNION
        SELECT jt.tenant || '/' || jt.name
        FROM sluice.job_types jt
        WHERE cardinality(jt.secrets) > 0
          AND (COALESCE(cardinality(p_secret_keys), 0) = 0
               OR EXISTS (SELECT 1 FROM sluice.secrets s
                          WHERE s.tenant = jt.tenant AND s.name = ANY (jt.secrets)
                            AND s.key_id <> ALL (p_secret_keys)))
        UNION
        SELECT t.tenant || '/sluice.webhook'
        FROM sluice.webhook_tenants_sealed_elsewhere(p_secret_keys) AS t(tenant)
        WHERE COALESCE(cardinality(p_secret_keys), 0) > 0
        UNION
        -- Paused types (migration 0024): their pending jobs are in the keys' lane, but one
        -- enqueued while the pause committed may still be in the main lane.
        SELECT jt.tenant || '/' || jt.name
        FROM sluice.job_types jt
        WHERE jt.paused);
    -- Webhook deliveries are signed with sealed secrets: a host with no key leaves them
    -- all.
    v_keyless boolean := COALESCE(cardinality(p_secret_keys), 0) = 0;
    -- Paused tenants (migration 0024): none of their jobs is claimed.
    v_paused text[] := ARRAY(SELECT t.id FROM sluice.tenants t WHERE t.paused);
    -- Whether any tenant has a daily quota (migration 0033): if none, the claim counts
    -- no attempts for quotas (a one-time filter; tenants_quota_idx).
    v_quota boolean := EXISTS (SELECT 1 FROM sluice.tenants t WHERE t.quota);
    -- Whether a key of the flow lane is ready: if not, the claim is 0022's statement.
    v_flow boolean := EXISTS (SELECT 1 FROM sluice.flow_keys k WHERE k.ready_at <= now());
    -- The ready keys this claim looks at, locked (see below).
    v_keys bigint[];
BEGIN
    -- Driven from the capped tenants, one probe of the claim index each (a scalar
    -- subquery is never turned into a join): as an EXISTS, the planner could make it a
    -- semi-join that reads every due pending job to find the tenants that have one.
    PERFORM 1
    FROM sluice.tenants t
    WHERE (t.max_running IS NOT NULL OR t.quota)
      AND (p_tenants IS NULL OR t.id = ANY (p_tenants))
      AND (p_skip_tenants IS NULL OR t.id <> ALL (p_skip_tenants))
      AND NOT t.paused
      AND ((SELECT true FROM sluice.jobs j
            WHERE j.tenant = t.id AND j.state = 'pending' AND j.flow_key IS NULL
              AND j.run_at <= now()
            LIMIT 1)
           OR (v_flow AND (SELECT true FROM sluice.flow_keys k
                           WHERE k.tenant = t.id AND k.ready_at <= now() LIMIT 1)))
    ORDER BY t.id
    FOR NO KEY UPDATE OF t;

    IF v_flow THEN
        -- Types under a fleet-wide cap or rate with a ready key: locked in (tenant, name)
        -- order, after the tenants (every claimer locks in that order, so none waits in
        -- a circle), so their running count and bucket are exact for the statements
        -- below, which take fresh snapshots. Claimers of such a type take turns for the
        -- length of one claim, as for a capped tenant.
        PERFORM 1
        FROM sluice.job_types jt
        WHERE jt.flow AND NOT jt.paused
          AND (jt.max_running IS NOT NULL OR jt.rate_count IS NOT NULL)
          AND (p_tenants IS NULL OR jt.tenant = ANY (p_tenants))
          AND (p_skip_tenants IS NULL OR jt.tenant <> ALL (p_skip_tenants))
          AND (p_job_types IS NULL OR jt.name = ANY (p_job_types))
          AND (SELECT true FROM sluice.flow_keys k
               WHERE k.tenant = jt.tenant AND k.job_type = jt.name AND k.ready_at <= now()
               LIMIT 1)
        ORDER BY jt.tenant, jt.name
        FOR NO KEY UPDATE OF jt;

        -- The keys to look at: for each (tenant, type) with a ready key (a loose index
        -- scan over flow_keys_ready_idx: one probe per pair), the keys ready longest,
        -- as many as the type may still start (its cap, its tokens, p_limit), locked
        -- with SKIP LOCKED: a key another claim holds is its to serve this time. Keys
        -- at their limit or out of tokens are not in the index range read.
        v_keys := ARRAY(
            WITH RECURSIVE pairs AS (
                (SELECT k.tenant, k.job_type FROM sluice.flow_keys k
                 WHERE k.ready_at IS NOT NULL
                 ORDER BY k.tenant, k.job_type LIMIT 1)
                UNION ALL
                SELECT n.tenant, n.job_type
                FROM pairs p
                CROSS JOIN LATERAL (
                    SELECT k.tenant, k.job_type FROM sluice.flow_keys k
                    WHERE k.ready_at IS NOT NULL
                      AND (k.tenant, k.job_type) > (p.tenant, p.job_type)
                    ORDER BY k.tenant, k.job_type LIMIT 1) n
            )
            SELECT fk.id
            FROM pairs p
            JOIN sluice.job_types jt ON jt.tenant = p.tenant AND jt.name = p.job_type
            CROSS JOIN LATERAL (
                SELECT GREATEST(0, LEAST(
                    p_limit,
                    CASE WHEN jt.max_running IS NULL THEN p_limit
                         ELSE jt.max_running
                              - (SELECT count(*)::integer FROM sluice.jobs j
                                 WHERE j.tenant = jt.tenant AND j.state = 'running'
                                   AND j.job_type = jt.name)
                    END,
                    CASE WHEN jt.rate_count IS NULL THEN p_limit
                         ELSE floor(sluice.flow_tokens(jt.rate_tokens, jt.rate_refilled_at,
                                                       jt.rate_count, jt.rate_period_ms))::integer
                    END)) AS n
            ) b
            CROSS JOIN LATERAL (
                SELECT k.id FROM sluice.flow_keys k
                WHERE k.tenant = p.tenant AND k.job_type = p.job_type
                  AND k.ready_at IS NOT NULL AND k.ready_at <= now()
                ORDER BY k.ready_at
                LIMIT b.n
                FOR UPDATE SKIP LOCKED
            ) fk
            WHERE NOT jt.paused
              AND (cardinality(v_paused) = 0 OR p.tenant <> ALL (v_paused))
              AND (p_tenants IS NULL OR p.tenant = ANY (p_tenants))
              AND (p_skip_tenants IS NULL OR p.tenant <> ALL (p_skip_tenants))
              AND (p_job_types IS NULL OR p.job_type = ANY (p_job_types))
              AND (cardinality(v_skip) = 0 OR (p.tenant || '/' || p.job_type) <> ALL (v_skip))
              AND (NOT v_keyless OR p.job_type <> 'sluice.webhook'));

        RETURN QUERY
        WITH RECURSIVE pending_tenants AS (
            -- The main lane's tenants, as in the statement below.
            (SELECT j.tenant FROM sluice.jobs j
             WHERE j.state = 'pending' AND j.flow_key IS NULL AND p_tenants IS NULL
             ORDER BY j.tenant LIMIT 1)
            UNION ALL
            SELECT (SELECT j.tenant FROM sluice.jobs j
                    WHERE j.state = 'pending' AND j.flow_key IS NULL AND j.tenant > p.tenant
                    ORDER BY j.tenant LIMIT 1)
            FROM pending_tenants p
            WHERE p.tenant IS NOT NULL
        ),
        key_rows AS (
            SELECT k.id, k.tenant, k.job_type, k.key, k.running, k.tokens, k.refilled_at
            FROM sluice.flow_keys k
            WHERE k.id = ANY (v_keys)
        ),
        -- Each type's room now (fresh snapshot, after the locks): its cap less what runs,
        -- and its whole tokens.
        types AS (
            SELECT jt.tenant, jt.name, jt.max_running_per_key, jt.key_rate_count,
                   jt.key_rate_period_ms, jt.rate_count, jt.rate_period_ms, x.tokens,
                   GREATEST(0, LEAST(
                       p_limit,
                       CASE WHEN jt.max_running IS NULL THEN p_limit
                            ELSE jt.max_running
                                 - (SELECT count(*)::integer FROM sluice.jobs j
                                    WHERE j.tenant = jt.tenant AND j.state = 'running'
                                      AND j.job_type = jt.name)
                       END,
                       CASE WHEN x.tokens IS NULL THEN p_limit
                            ELSE floor(x.tokens)::integer END)) AS room
            FROM (SELECT DISTINCT r.tenant, r.job_type FROM key_rows r) p
            JOIN sluice.job_types jt ON jt.tenant = p.tenant AND jt.name = p.job_type
            CROSS JOIN LATERAL (
                SELECT CASE WHEN jt.rate_count IS NOT NULL
                            THEN sluice.flow_tokens(jt.rate_tokens, jt.rate_refilled_at,
                                                    jt.rate_count, jt.rate_period_ms)
                       END AS tokens
            ) x
        ),
        -- Each key's room: the type's, its own limit less what it runs, its whole tokens.
        -- Jobs without a key ('') have no per-key limit or bucket.
        keys AS (
            SELECT r.id, r.tenant, r.job_type, r.key, r.running, ty.room AS type_room,
                   CASE WHEN r.key <> '' THEN ty.max_running_per_key END AS per_key,
                   ty.key_rate_count, ty.key_rate_period_ms, kt.tokens,
                   GREATEST(0, LEAST(
                       ty.room,
                       CASE WHEN r.key <> '' AND ty.max_running_per_key IS NOT NULL
                            THEN ty.max_running_per_key - r.running ELSE p_limit END,
                       CASE WHEN kt.tokens IS NULL THEN p_limit
                            ELSE floor(kt.tokens)::integer END)) AS room
            FROM key_rows r
            JOIN types ty ON ty.tenant = r.tenant AND ty.name = r.job_type
            CROSS JOIN LATERAL (
                SELECT CASE WHEN r.key <> '' AND ty.key_rate_count IS NOT NULL
                            THEN sluice.flow_tokens(r.tokens, r.refilled_at,
                                                    ty.key_rate_count, ty.key_rate_period_ms)
                       END AS tokens
            ) kt
        ),
        -- Each key's due jobs in its own order, up to its room (jobs_flow_idx).
        key_candidates AS (
            SELECT c.id, c.priority, c.run_at, k.tenant, k.job_type, k.id AS key_id,
                   row_number() OVER (PARTITION BY k.id
                                      ORDER BY c.priority DESC, c.run_at, c.id) AS key_rank
            FROM keys k
            CROSS JOIN LATERAL (
                SELECT j.id, j.priority, j.run_at
                FROM sluice.jobs j
                WHERE j.tenant = k.tenant AND j.job_type = k.job_type AND j.flow_key = k.key
                  AND j.state = 'pending' AND j.flow_key IS NOT NULL AND j.run_at <= now()
                  AND k.room > 0
                ORDER BY j.priority DESC, j.run_at, j.id
                LIMIT k.room
                FOR UPDATE SKIP LOCKED
            ) c
        ),
        -- Keys take turns within their type (every key's first job before any key's
        -- second), up to the type's room.
        key_ranked AS (
            SELECT c.id, c.priority, c.run_at, c.tenant, c.key_id, ty.room,
                   row_number() OVER (PARTITION BY c.tenant, c.job_type
                                      ORDER BY c.key_rank, c.priority DESC, c.run_at, c.id)
                       AS lane_rank
            FROM key_candidates c
            JOIN types ty ON ty.tenant = c.tenant AND ty.name = c.job_type
        ),
        tenant_list AS (
            SELECT l.tenant
            FROM (SELECT p.tenant FROM pending_tenants p WHERE p.tenant IS NOT NULL
                  UNION
                  SELECT r.tenant FROM key_rows r
                  UNION
                  SELECT u.tenant FROM unnest(p_tenants) AS u(tenant)) l
            WHERE (p_skip_tenants IS NULL OR l.tenant <> ALL (p_skip_tenants))
              AND (cardinality(v_paused) = 0 OR l.tenant <> ALL (v_paused))
        ),
        counted AS (
            SELECT tl.tenant, t.max_running,
                   -- A tenant under a daily quota (migration 0033) starts at most what
                   -- its quota has left (NULL: no quota binds).
                   CASE WHEN t.quota THEN sluice.quota_room(t.id) END AS quota_room,
                   CASE WHEN t.max_running IS NOT NULL
                             OR (SELECT count(*) FROM tenant_list) > 1
                        THEN (SELECT count(*)::integer FROM sluice.jobs j
                              WHERE j.tenant = tl.tenant AND j.state = 'running')
                        ELSE 0
                   END AS running
            FROM tenant_list tl
            LEFT JOIN sluice.tenants t ON t.id = tl.tenant
        ),
        budget AS (
            SELECT c.tenant, c.running,
                   GREATEST(0, LEAST(p_limit, COALESCE(c.max_running - c.running, p_limit),
                                  c.quota_room)) AS take
            FROM counted c
        ),
        main_candidates AS (
            SELECT c.id, c.priority, c.run_at, b.tenant, NULL::bigint AS key_id,
                   row_number() OVER (PARTITION BY b.tenant
                                      ORDER BY c.priority DESC, c.run_at, c.id) AS lane_rank
            FROM budget b
            CROSS JOIN LATERAL (
                SELECT j.id, j.priority, j.run_at
                FROM sluice.jobs j
                WHERE j.tenant = b.tenant AND j.state = 'pending' AND j.flow_key IS NULL
                  AND j.run_at <= now()
                  AND (p_job_types IS NULL OR j.job_type = ANY (p_job_types))
                  AND (cardinality(v_skip) = 0 OR (j.tenant || '/' || j.job_type) <> ALL (v_skip))
                  AND (NOT v_keyless OR j.job_type <> 'sluice.webhook')
                  AND b.take > 0
                ORDER BY j.priority DESC, j.run_at, j.id
                LIMIT b.take
                FOR UPDATE SKIP LOCKED
            ) c
        ),
        -- Both lanes in one fair ranking (docs/fairness.md): a tenant's key = what it
        -- runs + its rank, the lanes interleaved by their own ranks.
        candidates AS (
            SELECT a.id, a.priority, a.run_at, a.key_id,
                   b.running + row_number() OVER w AS fair, row_number() OVER w AS n, b.take
            FROM (SELECT m.id, m.priority, m.run_at, m.tenant, m.key_id, m.lane_rank
                  FROM main_candidates m
                  UNION ALL
                  SELECT k.id, k.priority, k.run_at, k.tenant, k.key_id, k.lane_rank
                  FROM key_ranked k
                  WHERE k.lane_rank <= k.room) a
            JOIN budget b ON b.tenant = a.tenant
            WINDOW w AS (PARTITION BY a.tenant ORDER BY a.lane_rank, a.priority DESC, a.run_at, a.id)
        ),
        picked AS (
            SELECT c.id, c.key_id FROM candidates c
            WHERE c.n <= c.take
            ORDER BY c.fair, c.priority DESC, c.run_at, c.id
            LIMIT p_limit
        ),
        claimed AS (
            UPDATE sluice.jobs j
            SET state = 'running',
                attempt = j.attempt + 1,
                locked_by = p_worker,
                locked_until = now() + p_lease_us * interval '1 microsecond',
                lease_token = gen_random_uuid(),
                updated_at = now(),
                attempt_id = nextval('sluice.attempt_history_id_seq'),
                attempt_started_at = clock_timestamp(),
                attempt_worker = p_worker,
                attempt_fuel = NULL
            WHERE j.id = ANY (ARRAY(SELECT p.id FROM picked p)) AND j.state::text = 'pending'
            RETURNING j.id, j.tenant, j.job_type, j.payload, j.priority, j.run_at, j.attempt,
                      j.max_attempts, j.lease_token, j.locked_until, j.traceparent, j.tracestate
        ),
        -- The attempts started, on the quota counters of tenants under a daily quota (their
        -- rows are locked above, so the room read by `counted` is exact).
        quota_counted AS (
            UPDATE sluice.tenants t
            SET quota_day = x.day,
                day_attempts = CASE WHEN t.quota_day = x.day THEN t.day_attempts ELSE 0 END + x.n
            FROM (SELECT c.tenant, count(*) AS n, sluice.quota_today() AS day
                  FROM claimed c WHERE v_quota GROUP BY c.tenant) x
            WHERE t.id = x.tenant AND t.quota
        ),
        taken AS (
            SELECT p.key_id, count(*)::integer AS n
            FROM picked p WHERE p.key_id IS NOT NULL
            GROUP BY p.key_id
        ),
        -- Every key looked at: its running count and bucket, and when to look again --
        -- never (NULL) at its limit (a job ending makes it ready), when a token is back
        -- when out of tokens, by its first pending job when it started nothing (NULL:
        -- none pending), else now, behind the keys that waited longer.
        keys_set AS (
            UPDATE sluice.flow_keys fk
            SET running = fk.running + coalesce(t.n, 0),
                tokens = CASE WHEN k.tokens IS NOT NULL
                              THEN k.tokens - coalesce(t.n, 0) END,
                refilled_at = CASE WHEN k.tokens IS NOT NULL THEN now() END,
                ready_at = CASE
                    WHEN k.type_room = 0 AND coalesce(t.n, 0) = 0 THEN fk.ready_at
                    WHEN k.per_key IS NOT NULL AND fk.running + coalesce(t.n, 0) >= k.per_key
                        THEN NULL
                    WHEN k.tokens IS NOT NULL AND k.tokens - coalesce(t.n, 0) < 1
                        THEN now() + (1 - (k.tokens - coalesce(t.n, 0))) * k.key_rate_period_ms
                                     / k.key_rate_count * interval '1 millisecond'
                    WHEN coalesce(t.n, 0) = 0
                        THEN (SELECT CASE WHEN f.run_at <= now() THEN f.run_at
                                          ELSE (SELECT min(j.run_at) FROM sluice.jobs j
                                                WHERE j.tenant = k.tenant
                                                  AND j.job_type = k.job_type
                                                  AND j.flow_key = k.key
                                                  AND j.state = 'pending'
                                                  AND j.flow_key IS NOT NULL) END
                              FROM (SELECT (SELECT j.run_at FROM sluice.jobs j
                                            WHERE j.tenant = k.tenant
                                              AND j.job_type = k.job_type
                                              AND j.flow_key = k.key
                                              AND j.state = 'pending'
                                              AND j.flow_key IS NOT NULL
                                            ORDER BY j.priority DESC, j.run_at, j.id
                                            LIMIT 1) AS run_at) f)
                    ELSE clock_timestamp()
                END
            FROM keys k
            LEFT JOIN taken t ON t.key_id = k.id
            WHERE fk.id = k.id
        ),
        -- The types' buckets: what this claim took from each.
        types_set AS (
            UPDATE sluice.job_types jt
            SET rate_tokens = ty.tokens - x.n, rate_refilled_at = now()
            FROM types ty
            JOIN (SELECT r.tenant, r.job_type, sum(t.n)::integer AS n
                  FROM taken t JOIN key_rows r ON r.id = t.key_id
                  GROUP BY r.tenant, r.job_type) x
              ON x.tenant = ty.tenant AND x.job_type = ty.name
            WHERE ty.tokens IS NOT NULL AND jt.tenant = ty.tenant AND jt.name = ty.name
        )
        SELECT c.id, c.tenant, c.job_type, c.payload, c.priority::integer, c.attempt,
               c.max_attempts, c.lease_token, c.locked_until, c.traceparent, c.tracestate, c.run_at
        FROM claimed c
        ORDER BY c.priority DESC, c.run_at, c.id;
        RETURN;
    END IF;

    -- No key is ready: migration 0022's statement, for the main lane.

    RETURN QUERY
    WITH RECURSIVE pending_tenants AS (
        -- A loose index scan over jobs_claim_tenant_idx: one probe per tenant with
        -- pending rows, however deep each backlog is.
        (SELECT j.tenant FROM sluice.jobs j
         WHERE j.state = 'pending' AND j.flow_key IS NULL AND p_tenants IS NULL
         ORDER BY j.tenant LIMIT 1)
        UNION ALL
        SELECT (SELECT j.tenant FROM sluice.jobs j
                WHERE j.state = 'pending' AND j.flow_key IS NULL AND j.tenant > p.tenant
                ORDER BY j.tenant LIMIT 1)
        FROM pending_tenants p
        WHERE p.tenant IS NOT NULL
    ),
    tenant_list AS (
        SELECT l.tenant
        FROM (SELECT p.tenant FROM pending_tenants p WHERE p.tenant IS NOT NULL
              UNION
              SELECT u.tenant FROM unnest(p_tenants) AS u(tenant)) l
        -- A spare slot's claim leaves the tenants already running on that worker.
        WHERE (p_skip_tenants IS NULL OR l.tenant <> ALL (p_skip_tenants))
          AND (cardinality(v_paused) = 0 OR l.tenant <> ALL (v_paused))
    ),
    counted AS (
        SELECT tl.tenant, t.max_running,
               -- A tenant under a daily quota (migration 0033) starts at most what its
               -- quota has left (NULL: no quota binds).
               CASE WHEN t.quota THEN sluice.quota_room(t.id) END AS quota_room,
               -- Counted per tenant over jobs_running_idx, by index scans (which mark
               -- index entries of finished jobs dead as they pass them; a bitmap scan
               -- would not) -- but only where the count changes the answer: for a cap,
               -- or to interleave several tenants. One uncapped tenant's claim would
               -- otherwise visit every job it runs (O(running) per claim).
               CASE WHEN t.max_running IS NOT NULL
                         OR (SELECT count(*) FROM tenant_list) > 1
                    THEN (SELECT count(*)::integer FROM sluice.jobs j
                          WHERE j.tenant = tl.tenant AND j.state = 'running')
                    ELSE 0
               END AS running
        FROM tenant_list tl
        LEFT JOIN sluice.tenants t ON t.id = tl.tenant
    ),
    budget AS (
        SELECT c.tenant, c.running,
               GREATEST(0, LEAST(p_limit, COALESCE(c.max_running - c.running, p_limit),
                                  c.quota_room)) AS take
        FROM counted c
    ),
    candidates AS (
        SELECT c.id, c.priority, c.run_at,
               b.running + row_number() OVER (
                   PARTITION BY b.tenant ORDER BY c.priority DESC, c.run_at, c.id) AS fair
        FROM budget b
        CROSS JOIN LATERAL (
            SELECT j.id, j.priority, j.run_at
            FROM sluice.jobs j
            WHERE j.tenant = b.tenant AND j.state = 'pending' AND j.flow_key IS NULL
              AND j.run_at <= now()
              AND (p_job_types IS NULL OR j.job_type = ANY (p_job_types))
              AND (cardinality(v_skip) = 0 OR (j.tenant || '/' || j.job_type) <> ALL (v_skip))
              AND (NOT v_keyless OR j.job_type <> 'sluice.webhook')
              AND b.take > 0
            ORDER BY j.priority DESC, j.run_at, j.id
            LIMIT b.take
            FOR UPDATE SKIP LOCKED
        ) c
    ),
    picked AS (
        SELECT c.id FROM candidates c
        ORDER BY c.fair, c.priority DESC, c.run_at, c.id
        LIMIT p_limit
    ),
    claimed AS (
        UPDATE sluice.jobs j
        SET state = 'running',
            attempt = j.attempt + 1,
            locked_by = p_worker,
            locked_until = now() + p_lease_us * interval '1 microsecond',
            lease_token = gen_random_uuid(),
            updated_at = now(),
            -- The attempt lives on the row until it ends (see the top of this file).
            -- clock_timestamp(), not now(): a claim may have waited on a capped
            -- tenant's lock since its statement began, and the history must not show
            -- it starting before the completion it waited for.
            attempt_id = nextval('sluice.attempt_history_id_seq'),
            attempt_started_at = clock_timestamp(),
            attempt_worker = p_worker,
            attempt_fuel = NULL
        -- By primary key: the ids are already locked (the state test is a guard, not a
        -- search). It compares text so that no plan can match the pending-only partial
        -- indexes' predicate and scan one of them whole for these ids.
        WHERE j.id = ANY (ARRAY(SELECT p.id FROM picked p)) AND j.state::text = 'pending'
        RETURNING j.id, j.tenant, j.job_type, j.payload, j.priority, j.run_at, j.attempt,
                  j.max_attempts, j.lease_token, j.locked_until, j.traceparent, j.tracestate
    ),
    -- The attempts started, on the quota counters of tenants under a daily quota
    -- (migration 0033; their rows are locked above, so the room read by `counted` is
    -- exact).
    quota_counted AS (
        UPDATE sluice.tenants t
        SET quota_day = x.day,
            day_attempts = CASE WHEN t.quota_day = x.day THEN t.day_attempts ELSE 0 END + x.n
        FROM (SELECT c.tenant, count(*) AS n, sluice.quota_today() AS day
              FROM claimed c WHERE v_quota GROUP BY c.tenant) x
        WHERE t.id = x.tenant AND t.quota
    )
    SELECT c.id, c.tenant, c.job_type, c.payload, c.priority::integer, c.attempt,
           c.max_attempts, c.lease_token, c.locked_until, c.traceparent, c.tracestate, c.run_at
    FROM claimed c
    ORDER BY c.priority DESC, c.run_at, c.id;
END
$function$;

CREATE OR REPLACE FUNCTION sluice.complete_batch(p_ids bigint[], p_tokens uuid[], p_outputs bytea[], p_fuel bigint[], p_logs bytea[], p_dropped bigint[])
 RETURNS TABLE(id bigint)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_bitmapscan TO 'off'
 SET enable_seqscan TO 'off'
 SET jit TO 'off'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH done AS (
        UPDATE sluice.jobs j
        SET state = 'completed', output = (p_outputs)[width_bucket(j.id, p_ids)],
            finished_at = now(), updated_at = now(),
            attempt_fuel = (p_fuel)[width_bucket(j.id, p_ids)],
            locked_by = NULL, locked_until = NULL, lease_token = NULL, cancel_requested = false
        WHERE j.id = ANY (p_ids) AND j.state::text = 'running'
          AND j.lease_token = (p_tokens)[width_bucket(j.id, p_ids)]
        RETURNING j.id, j.attempt, j.attempt_id
    ),
    logged AS (
        INSERT INTO sluice.attempt_logs (job_id, attempt_id, attempt, log, dropped_bytes)
        SELECT d.id, d.attempt_id, d.attempt, l.log, l.dropped
        FROM done d
        CROSS JOIN LATERAL (
            SELECT (p_logs)[n] AS log, coalesce((p_dropped)[n], 0) AS dropped
            FROM (SELECT width_bucket(d.id, p_ids) AS n) p
        ) l
        WHERE p_logs IS NOT NULL AND l.log IS NOT NULL
    )
    SELECT id FROM done;
END
$function$;

CREATE OR REPLACE FUNCTION sluice.enqueue(tenant text, job_type text, payload jsonb, priority integer DEFAULT 10, run_at timestamp with time zone DEFAULT now(), idempotency_key text DEFAULT NULL::text, max_attempts integer DEFAULT NULL::integer, key_scope text DEFAULT 'retained'::text, concurrency_key text DEFAULT NULL::text, traceparent text DEFAULT NULL::text, tracestate text DEFAULT NULL::text)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    v_run_at timestamptz := coalesce(enqueue.run_at, now());
    v_result record;
    v_round  integer;
BEGIN
    IF enqueue.tenant IS NULL THEN
        RAISE EXCEPTION 'invalid tenant: must not be NULL'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'tenant';
    END IF;
    IF enqueue.job_type IS NULL OR char_length(enqueue.job_type) NOT BETWEEN 1 AND 128 THEN
        RAISE EXCEPTION 'invalid job_type: a job type name must be 1 to 128 characters, got %',
                coalesce(char_length(enqueue.job_type)::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'job_type';
    END IF;
    IF enqueue.payload IS NULL THEN
        RAISE EXCEPTION 'invalid payload: must not be NULL (use ''{}''::jsonb for an empty one)'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'payload';
    END IF;
    IF enqueue.priority IS NULL OR enqueue.priority NOT BETWEEN -32768 AND 32767 THEN
        RAISE EXCEPTION 'invalid priority: % is outside -32768..=32767; use the labels low=0, medium=10, high=20, critical=30',
                coalesce(enqueue.priority::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'priority';
    END IF;
    IF NOT isfinite(v_run_at)
       OR v_run_at NOT BETWEEN timestamptz '1970-01-01 00:00:00+00'
                           AND timestamptz '9999-12-31 23:59:59.999999+00' THEN
        RAISE EXCEPTION 'invalid run_at: % is outside the accepted range 1970-01-01 00:00:00+00 .. 9999-12-31 23:59:59.999999+00',
                v_run_at
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'run_at';
    END IF;
    IF enqueue.max_attempts IS NOT NULL AND enqueue.max_attempts < 1 THEN
        RAISE EXCEPTION 'invalid max_attempts: must be at least 1 (1 means never retried), got %',
                enqueue.max_attempts
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'max_attempts';
    END IF;
    IF enqueue.idempotency_key IS NOT NULL
       AND char_length(enqueue.idempotency_key) NOT BETWEEN 1 AND 255 THEN
        RAISE EXCEPTION 'invalid idempotency_key: must be 1 to 255 characters, got %',
                char_length(enqueue.idempotency_key)
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'idempotency_key';
    END IF;
    IF enqueue.concurrency_key IS NOT NULL
       AND char_length(enqueue.concurrency_key) NOT BETWEEN 1 AND 255 THEN
        RAISE EXCEPTION 'invalid concurrency_key: must be 1 to 255 characters, got %',
                char_length(enqueue.concurrency_key)
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'concurrency_key';
    END IF;
    IF enqueue.key_scope IS NULL OR enqueue.key_scope NOT IN ('retained', 'unfinished') THEN
        RAISE EXCEPTION 'invalid key_scope: % is not a key scope; use ''retained'' or ''unfinished''',
                coalesce(quote_literal(enqueue.key_scope), 'NULL')
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'key_scope';
    END IF;

    IF enqueue.traceparent IS NOT NULL AND NOT sluice.valid_traceparent(enqueue.traceparent) THEN
        RAISE EXCEPTION 'invalid traceparent: % is not a W3C traceparent (00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, lowercase, ids not all zero)',
                quote_literal(left(enqueue.traceparent, 64))
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'traceparent';
    END IF;

    -- The unique index jobs_idempotency_key_uidx is the authority. A holder that commits
    -- while a round waits is skipped by ON CONFLICT and unseen by its snapshot (holder
    -- NULL); the next round is a new statement (a new snapshot under READ COMMITTED)
    -- and finds it, or inserts if the holder freed its key in between.
    FOR v_round IN 1..16 LOOP
        SELECT * INTO v_result
        FROM sluice.enqueue_jobs(
            ARRAY[enqueue.tenant], ARRAY[enqueue.job_type],
            ARRAY[convert_to(enqueue.payload::text, 'UTF8')],
            ARRAY[enqueue.priority::smallint], NULL, ARRAY[v_run_at],
            ARRAY[enqueue.max_attempts],
            CASE WHEN enqueue.idempotency_key IS NOT NULL THEN ARRAY[enqueue.idempotency_key] END,
            ARRAY[enqueue.key_scope],
            coalesce(nullif(current_setting('sluice.default_max_payload_bytes', true), '')::bigint,
                     1048576),
            NULL, NULL,
            CASE WHEN enqueue.concurrency_key IS NOT NULL THEN ARRAY[enqueue.concurrency_key] END,
            NULL,
            CASE WHEN enqueue.traceparent IS NOT NULL THEN ARRAY[enqueue.traceparent] END,
            CASE WHEN enqueue.traceparent IS NOT NULL AND sluice.valid_tracestate(enqueue.tracestate)
                 THEN ARRAY[enqueue.tracestate] END);
        IF v_result.problem = 'tenant' THEN
            RAISE EXCEPTION 'unknown tenant "%": create it first (sluice tenants create %)',
                    enqueue.tenant, enqueue.tenant
                USING ERRCODE = 'foreign_key_violation', COLUMN = 'tenant';
        ELSIF v_result.problem = 'job_type' THEN
            RAISE EXCEPTION 'unknown job type "%" for tenant "%": register it with a component first',
                    enqueue.job_type, enqueue.tenant
                USING ERRCODE = 'foreign_key_violation', COLUMN = 'job_type';
        ELSIF v_result.problem IS NOT NULL THEN
            RAISE EXCEPTION 'payload is % bytes, over the limit of % bytes: store large data elsewhere and pass a reference',
                    v_result.payload_size, v_result.payload_limit
                USING ERRCODE = 'program_limit_exceeded', COLUMN = 'payload';
        END IF;
        IF v_result.dup_ords IS NULL THEN
            RETURN v_result.ids[1]; -- created
        END IF;
        IF v_result.dup_holders[1] IS NOT NULL THEN
            RETURN v_result.dup_holders[1]; -- a duplicate: nothing created
        END IF;
    END LOOP;
    RAISE EXCEPTION 'idempotency key "%" of tenant "%" kept changing hands during enqueue; retry later',
            enqueue.idempotency_key, enqueue.tenant
        USING ERRCODE = 'serialization_failure', COLUMN = 'idempotency_key';
END
$function$;
REVOKE EXECUTE ON FUNCTION sluice.enqueue(tenant text, job_type text, payload jsonb, priority integer, run_at timestamp with time zone, idempotency_key text, max_attempts integer, key_scope text, concurrency_key text, traceparent text, tracestate text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint)
 RETURNS TABLE(problem text, problem_ord bigint, payload_size bigint, payload_limit bigint, ids bigint[], dup_ords bigint[], dup_holders bigint[])
 LANGUAGE sql
AS $function$
    SELECT * FROM sluice.enqueue_jobs(p_tenant, p_job_type, p_payload, p_priority,
                                      p_delay_us, p_at, p_max_attempts, p_idempotency_key,
                                      p_key_scope, p_default_max_payload,
                                      NULL::bigint[], NULL::integer[]);
$function$;

CREATE OR REPLACE FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[])
 RETURNS TABLE(problem text, problem_ord bigint, payload_size bigint, payload_limit bigint, ids bigint[], dup_ords bigint[], dup_holders bigint[])
 LANGUAGE sql
AS $function$
    SELECT * FROM sluice.enqueue_jobs(p_tenant, p_job_type, p_payload, p_priority,
                                      p_delay_us, p_at, p_max_attempts, p_idempotency_key,
                                      p_key_scope, p_default_max_payload, p_parent_id,
                                      p_parent_seq, NULL::text[], NULL::int8[],
                                      NULL::text[], NULL::text[]);
$function$;

CREATE OR REPLACE FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[], p_concurrency_key text[])
 RETURNS TABLE(problem text, problem_ord bigint, payload_size bigint, payload_limit bigint, ids bigint[], dup_ords bigint[], dup_holders bigint[])
 LANGUAGE sql
AS $function$
    SELECT * FROM sluice.enqueue_jobs(p_tenant, p_job_type, p_payload, p_priority,
                                      p_delay_us, p_at, p_max_attempts, p_idempotency_key,
                                      p_key_scope, p_default_max_payload, p_parent_id,
                                      p_parent_seq, p_concurrency_key, NULL::int8[],
                                      NULL::text[], NULL::text[]);
$function$;

CREATE OR REPLACE FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[], p_concurrency_key text[], p_id bigint[])
 RETURNS TABLE(problem text, problem_ord bigint, payload_size bigint, payload_limit bigint, ids bigint[], dup_ords bigint[], dup_holders bigint[])
 LANGUAGE sql
AS $function$
    SELECT * FROM sluice.enqueue_jobs(p_tenant, p_job_type, p_payload, p_priority,
                                      p_delay_us, p_at, p_max_attempts, p_idempotency_key,
                                      p_key_scope, p_default_max_payload, p_parent_id,
                                      p_parent_seq, p_concurrency_key, p_id,
                                      NULL::text[], NULL::text[]);
$function$;

CREATE OR REPLACE FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[], p_concurrency_key text[], p_id bigint[], p_traceparent text[], p_tracestate text[])
 RETURNS TABLE(problem text, problem_ord bigint, payload_size bigint, payload_limit bigint, ids bigint[], dup_ords bigint[], dup_holders bigint[])
 LANGUAGE plpgsql
AS $function$
BEGIN
    -- p_delay_us .. p_key_scope may be NULL instead of an array when no row sets them:
    -- SRFs in one SELECT list run in lockstep and a shorter (or NULL) array is padded
    -- with NULLs, so a client need not send 100k defaults.
    IF p_idempotency_key IS NULL THEN
        RETURN QUERY
        WITH groups AS (
            SELECT g.tenant, g.job_type, g.first_ord, g.max_size,
                   t.id IS NOT NULL AS tenant_ok,
                   jt.name IS NOT NULL AS type_ok,
                   coalesce(t.max_payload_bytes, p_default_max_payload) AS payload_limit
            FROM (
                SELECT u.tenant, u.job_type, min(u.ord) AS first_ord, max(u.size) AS max_size
                FROM (SELECT unnest(p_tenant) AS tenant, unnest(p_job_type) AS job_type,
                             octet_length(unnest(p_payload))::int8 AS size,
                             generate_series(1::int8, cardinality(p_tenant)) AS ord) u
                GROUP BY u.tenant, u.job_type
            ) g
            LEFT JOIN sluice.tenants t ON t.id = g.tenant
            LEFT JOIN sluice.job_types jt ON jt.tenant = g.tenant AND jt.name = g.job_type
        ),
        first_problem AS (
            SELECT g.first_ord,
                   CASE WHEN NOT g.tenant_ok THEN 'tenant'
                        WHEN NOT g.type_ok THEN 'job_type'
                        ELSE 'payload' END AS problem,
                   g.max_size, g.payload_limit
            FROM groups g
            WHERE NOT g.tenant_ok OR NOT g.type_ok OR g.max_size > g.payload_limit
            ORDER BY g.first_ord
            LIMIT 1
        ),
        new_ids AS (
            SELECT array_agg(coalesce(p_id[g.i], nextval('sluice.jobs_id_seq'))) AS a
            FROM generate_series(1, cardinality(p_tenant)) AS g(i)
            WHERE NOT EXISTS (SELECT 1 FROM first_problem)
            HAVING count(*) > 0
        ),
        inserted AS (
            INSERT INTO sluice.jobs (id, tenant, job_type, payload, priority, run_at,
                                     max_attempts, key_scope, parent_id, parent_seq, flow_key,
                                     traceparent, tracestate)
            SELECT u.id, u.tenant, u.job_type, u.payload, u.priority,
                   coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond'),
                   coalesce(u.max_attempts, jt.max_attempts),
                   coalesce(u.key_scope, 'retained')::sluice.key_scope, u.parent_id, u.parent_seq,
                   coalesce(u.concurrency_key, CASE WHEN jt.flow THEN '' END),
                   u.traceparent, u.tracestate
            FROM (SELECT unnest(n.a) AS id, unnest(p_tenant) AS tenant,
                         unnest(p_job_type) AS job_type, unnest(p_payload) AS payload,
                         unnest(p_priority) AS priority, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at, unnest(p_max_attempts) AS max_attempts,
                         unnest(p_key_scope) AS key_scope,
                         unnest(p_concurrency_key) AS concurrency_key,
                         unnest(p_parent_id) AS parent_id, unnest(p_parent_seq) AS parent_seq,
                         unnest(p_traceparent) AS traceparent,
                         unnest(p_tracestate) AS tracestate
                  FROM new_ids n) u
            JOIN sluice.job_types jt ON jt.tenant = u.tenant AND jt.name = u.job_type
        ),
        -- The earliest due time of the batch, from the inputs (so no CTE reads back a
        -- payload): every row is inserted or the statement fails.
        first_due AS (
            SELECT min(coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond')) AS at
            FROM (SELECT unnest(n.a) AS id, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at
                  FROM new_ids n) u
        ),
        notified AS (
            SELECT pg_notify('sluice_jobs',
                             CASE WHEN f.at <= now() THEN ''
                                  ELSE ceil(extract(epoch FROM f.at - now()) * 1000000)::int8::text
                             END)
            FROM first_due f
            WHERE f.at IS NOT NULL
        )
        SELECT p.problem, p.first_ord, p.max_size, p.payload_limit,
               (SELECT n.a FROM new_ids n),
               NULL::int8[], NULL::int8[]
        FROM (SELECT count(*) AS sent FROM notified) one
        LEFT JOIN first_problem p ON true;
    ELSE
        RETURN QUERY
        WITH groups AS (
            SELECT g.tenant, g.job_type, g.first_ord, g.max_size,
                   t.id IS NOT NULL AS tenant_ok,
                   jt.name IS NOT NULL AS type_ok,
                   coalesce(t.max_payload_bytes, p_default_max_payload) AS payload_limit
            FROM (
                SELECT u.tenant, u.job_type, min(u.ord) AS first_ord, max(u.size) AS max_size
                FROM (SELECT unnest(p_tenant) AS tenant, unnest(p_job_type) AS job_type,
                             octet_length(unnest(p_payload))::int8 AS size,
                             generate_series(1::int8, cardinality(p_tenant)) AS ord) u
                GROUP BY u.tenant, u.job_type
            ) g
            LEFT JOIN sluice.tenants t ON t.id = g.tenant
            LEFT JOIN sluice.job_types jt ON jt.tenant = g.tenant AND jt.name = g.job_type
        ),
        first_problem AS (
            SELECT g.first_ord,
                   CASE WHEN NOT g.tenant_ok THEN 'tenant'
                        WHEN NOT g.type_ok THEN 'job_type'
                        ELSE 'payload' END AS problem,
                   g.max_size, g.payload_limit
            FROM groups g
            WHERE NOT g.tenant_ok OR NOT g.type_ok OR g.max_size > g.payload_limit
            ORDER BY g.first_ord
            LIMIT 1
        ),
        new_ids AS (
            SELECT array_agg(coalesce(p_id[g.i], nextval('sluice.jobs_id_seq'))) AS a
            FROM generate_series(1, cardinality(p_tenant)) AS g(i)
            WHERE NOT EXISTS (SELECT 1 FROM first_problem)
            HAVING count(*) > 0
        ),
        ins_plain AS (
            INSERT INTO sluice.jobs (id, tenant, job_type, payload, priority, run_at,
                                     max_attempts, key_scope, parent_id, parent_seq, flow_key,
                                     traceparent, tracestate)
            SELECT u.id, u.tenant, u.job_type, u.payload, u.priority,
                   coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond'),
                   coalesce(u.max_attempts, jt.max_attempts),
                   coalesce(u.key_scope, 'retained')::sluice.key_scope, u.parent_id, u.parent_seq,
                   coalesce(u.concurrency_key, CASE WHEN jt.flow THEN '' END),
                   u.traceparent, u.tracestate
            FROM (SELECT unnest(n.a) AS id, unnest(p_tenant) AS tenant,
                         unnest(p_job_type) AS job_type, unnest(p_payload) AS payload,
                         unnest(p_priority) AS priority, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at, unnest(p_max_attempts) AS max_attempts,
                         unnest(p_idempotency_key) AS idempotency_key,
                         unnest(p_key_scope) AS key_scope,
                         unnest(p_concurrency_key) AS concurrency_key,
                         unnest(p_parent_id) AS parent_id, unnest(p_parent_seq) AS parent_seq,
                         unnest(p_traceparent) AS traceparent,
                         unnest(p_tracestate) AS tracestate
                  FROM new_ids n) u
            JOIN sluice.job_types jt ON jt.tenant = u.tenant AND jt.name = u.job_type
            WHERE u.idempotency_key IS NULL
        ),
        keyless_first AS (
            SELECT min(coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond')) AS at
            FROM (SELECT unnest(n.a) AS id, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at, unnest(p_idempotency_key) AS idempotency_key
                  FROM new_ids n) u
            WHERE u.idempotency_key IS NULL
        ),
        ins_keyed AS (
            INSERT INTO sluice.jobs (id, tenant, job_type, payload, priority, run_at,
                                     max_attempts, idempotency_key, key_scope,
                                     parent_id, parent_seq, flow_key,
                                     traceparent, tracestate)
            SELECT u.id, u.tenant, u.job_type, u.payload, u.priority,
                   coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond'),
                   coalesce(u.max_attempts, jt.max_attempts), u.idempotency_key,
                   coalesce(u.key_scope, 'retained')::sluice.key_scope, u.parent_id, u.parent_seq,
                   coalesce(u.concurrency_key, CASE WHEN jt.flow THEN '' END),
                   u.traceparent, u.tracestate
            FROM (SELECT unnest(n.a) AS id, unnest(p_tenant) AS tenant,
                         unnest(p_job_type) AS job_type, unnest(p_payload) AS payload,
                         unnest(p_priority) AS priority, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at, unnest(p_max_attempts) AS max_attempts,
                         unnest(p_idempotency_key) AS idempotency_key,
                         unnest(p_key_scope) AS key_scope,
                         unnest(p_concurrency_key) AS concurrency_key,
                         unnest(p_parent_id) AS parent_id, unnest(p_parent_seq) AS parent_seq,
                         unnest(p_traceparent) AS traceparent,
                         unnest(p_tracestate) AS tracestate
                  FROM new_ids n) u
            JOIN sluice.job_types jt ON jt.tenant = u.tenant AND jt.name = u.job_type
            WHERE u.idempotency_key IS NOT NULL
            ON CONFLICT DO NOTHING
            RETURNING sluice.jobs.id, sluice.jobs.run_at
        ),
        -- Rows skipped by ON CONFLICT, with the job now holding their key. This reads the
        -- statement's snapshot: a holder that committed after it began is not seen and
        -- comes back NULL, for the caller to retry in a new statement.
        dups AS (
            SELECT u.ord,
                   (SELECT j.id FROM sluice.jobs j
                    WHERE j.tenant = u.tenant AND j.idempotency_key = u.idempotency_key
                      AND (j.key_scope = 'retained' OR j.state IN ('pending', 'running', 'waiting'))) AS holder
            FROM (SELECT unnest(n.a) AS id, unnest(p_tenant) AS tenant,
                         unnest(p_idempotency_key) AS idempotency_key,
                         generate_series(1::int8, cardinality(n.a)) AS ord
                  FROM new_ids n) u
            WHERE u.idempotency_key IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM ins_keyed k WHERE k.id = u.id)
        ),
        first_due AS (
            SELECT least((SELECT k.at FROM keyless_first k),
                         (SELECT min(k.run_at) FROM ins_keyed k)) AS at
        ),
        notified AS (
            SELECT pg_notify('sluice_jobs',
                             CASE WHEN f.at <= now() THEN ''
                                  ELSE ceil(extract(epoch FROM f.at - now()) * 1000000)::int8::text
                             END)
            FROM first_due f
            WHERE f.at IS NOT NULL
        )
        SELECT p.problem, p.first_ord, p.max_size, p.payload_limit,
               (SELECT n.a FROM new_ids n),
               (SELECT array_agg(d.ord ORDER BY d.ord) FROM dups d),
               (SELECT array_agg(d.holder ORDER BY d.ord) FROM dups d)
        FROM (SELECT count(*) AS sent FROM notified) one
        LEFT JOIN first_problem p ON true;
    END IF;
END
$function$;

CREATE OR REPLACE FUNCTION sluice.fail_batch(p_ids bigint[], p_tokens uuid[], p_errors text[], p_fatal boolean[], p_base_us double precision[], p_cap_us double precision[], p_jitter double precision[], p_fuel bigint[], p_channel text, p_logs bytea[], p_dropped bigint[])
 RETURNS TABLE(id bigint, state sluice.job_state, run_at timestamp with time zone, notified bigint)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_bitmapscan TO 'off'
 SET enable_seqscan TO 'off'
 SET jit TO 'off'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH held AS (
        SELECT j.id, i.error, i.fuel, i.log, i.dropped,
               CASE WHEN j.cancel_requested THEN 'cancelled'
                    WHEN i.fatal OR j.attempt >= j.max_attempts THEN 'dead'
                    ELSE 'pending'
               END::sluice.job_state AS next_state,
               now() + least(i.cap_us, i.base_us * power(2::float8, least(j.attempt - 1, 62)))
                     * (1 + i.jitter * (2 * random() - 1))
                     * interval '1 microsecond' AS retry_at,
               attempt, attempt_id, attempt_started_at, attempt_worker, lease_token
        FROM sluice.jobs j
        -- The row's own failure, at its id's position in the arrays.
        CROSS JOIN LATERAL (
            SELECT (p_tokens)[n] AS token, (p_errors)[n] AS error, (p_fatal)[n] AS fatal,
                   (p_base_us)[n] AS base_us, (p_cap_us)[n] AS cap_us,
                   (p_jitter)[n] AS jitter, (p_fuel)[n] AS fuel,
                   (p_logs)[n] AS log, coalesce((p_dropped)[n], 0) AS dropped
            FROM (SELECT width_bucket(j.id, p_ids) AS n) p
        ) i
        -- By primary key, for the reasons given in finish/complete_many.sql.
        WHERE j.id = ANY (p_ids) AND j.state::text = 'running' AND j.lease_token = i.token
        ORDER BY j.id
        FOR UPDATE OF j
    ),
    moved AS (
        UPDATE sluice.jobs j
        SET state = h.next_state,
            run_at = CASE WHEN h.next_state = 'pending' THEN h.retry_at ELSE j.run_at END,
            finished_at = CASE WHEN h.next_state = 'pending' THEN NULL ELSE now() END,
            last_error = h.error,
            locked_by = NULL, locked_until = NULL, lease_token = NULL, cancel_requested = false,
            updated_at = now(),
            -- The attempt leaves the row: it is archived below.
            attempt_id = NULL, attempt_started_at = NULL, attempt_worker = NULL, attempt_fuel = NULL
        FROM held h
        WHERE j.id = h.id AND j.state::text = 'running' AND j.lease_token = h.lease_token
        RETURNING j.id, j.state, j.run_at, h.error, h.fuel, h.log, h.dropped,
                  h.attempt AS ran_attempt, h.attempt_id AS ran_id,
                  h.attempt_started_at AS ran_started_at, h.attempt_worker AS ran_worker,
                  h.lease_token AS ran_token
    ),
    -- Every running row has its attempt on it (the jobs_attempt_on_row check), so every
    -- moved row archives one, finished now.
    history AS (
        INSERT INTO sluice.attempt_history
            (id, job_id, attempt, lease_token, worker, started_at, finished_at, outcome, error, fuel_used)
        SELECT m.ran_id, m.id, m.ran_attempt, m.ran_token, m.ran_worker, m.ran_started_at, now(),
               CASE m.state WHEN 'pending' THEN 'retry' WHEN 'dead' THEN 'dead' ELSE 'cancelled' END,
               m.error, m.fuel
        FROM moved m
    ),
    logged AS (
        INSERT INTO sluice.attempt_logs (job_id, attempt_id, attempt, log, dropped_bytes)
        SELECT m.id, m.ran_id, m.ran_attempt, m.log, m.dropped
        FROM moved m
        WHERE m.log IS NOT NULL
    ),
    notified AS (
        SELECT pg_notify(p_channel, CASE WHEN n.at <= now() THEN ''
                                  ELSE ceil(extract(epoch FROM n.at - now()) * 1000000)::int8::text
                             END)
        FROM (SELECT min(m.run_at) AS at FROM moved m WHERE m.state = 'pending') n
        WHERE n.at IS NOT NULL
    )
    SELECT id, state, run_at, (SELECT count(*) FROM notified) AS notified FROM moved;
END
$function$;

CREATE OR REPLACE FUNCTION sluice.flow_keys_follow()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.flow_key IS NOT NULL AND OLD.state = 'running'
       AND (TG_OP = 'DELETE' OR NEW.state <> 'running') THEN
        UPDATE sluice.flow_keys k
        SET running = greatest(k.running - 1, 0), ready_at = coalesce(k.ready_at, now())
        WHERE k.tenant = OLD.tenant AND k.job_type = OLD.job_type AND k.key = OLD.flow_key;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.flow_key IS NOT NULL AND NEW.state = 'pending' THEN
        INSERT INTO sluice.flow_keys AS k (tenant, job_type, key, ready_at)
        VALUES (NEW.tenant, NEW.job_type, NEW.flow_key, NEW.run_at)
        ON CONFLICT (tenant, job_type, key) DO UPDATE SET ready_at = EXCLUDED.ready_at
        WHERE k.ready_at IS NULL OR k.ready_at > EXCLUDED.ready_at;
    END IF;
    RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION sluice.flow_tokens(tokens double precision, refilled_at timestamp with time zone, count integer, period_ms bigint)
 RETURNS double precision
 LANGUAGE sql
 STABLE
AS $function$
    SELECT CASE WHEN tokens IS NULL OR refilled_at IS NULL THEN count::float8
                ELSE least(count::float8,
                           tokens + greatest(extract(epoch FROM now() - refilled_at), 0)
                                    * 1000 * count / period_ms)
           END
$function$;

CREATE OR REPLACE FUNCTION sluice.heartbeat_batch(p_worker text, p_ids bigint[], p_tokens uuid[], p_lease_us bigint)
 RETURNS TABLE(id bigint, cancel_requested boolean)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_bitmapscan TO 'off'
 SET enable_seqscan TO 'off'
 SET jit TO 'off'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH registry AS (
        UPDATE sluice.workers SET last_heartbeat = now()
        WHERE sluice.workers.id = p_worker AND stopped_at IS NULL
    ),
    extended AS (
        UPDATE sluice.jobs j
        SET locked_until = now() + p_lease_us * interval '1 microsecond', updated_at = now()
        WHERE j.id = ANY (p_ids) AND j.state::text = 'running'
          AND j.lease_token = (p_tokens)[width_bucket(j.id, p_ids)] AND j.locked_by = p_worker
        RETURNING j.id, j.cancel_requested
    )
    SELECT e.id, e.cancel_requested FROM extended e;
END
$function$;

CREATE OR REPLACE FUNCTION sluice.notify_finished()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    PERFORM pg_notify('sluice_finished', NEW.id::text);
    RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION sluice.payload_jsonb(p bytea)
 RETURNS jsonb
 LANGUAGE plpgsql
 IMMUTABLE PARALLEL SAFE STRICT
AS $function$
BEGIN
    RETURN convert_from(p, 'UTF8')::jsonb;
EXCEPTION WHEN OTHERS THEN
    RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION sluice.quota_room(p_tenant text)
 RETURNS integer
 LANGUAGE sql
 STABLE
AS $function$
    SELECT CASE
        WHEN u.fuel >= t.max_fuel_per_day OR u.egress_bytes >= t.max_egress_bytes_per_day
            THEN 0
        WHEN t.max_attempts_per_day IS NOT NULL
            THEN LEAST(GREATEST(0, t.max_attempts_per_day - u.attempts), 2147483647)::int4
    END
    FROM sluice.tenants t, sluice.quota_used(p_tenant) u
    WHERE t.id = p_tenant
$function$;

CREATE OR REPLACE FUNCTION sluice.quota_today()
 RETURNS date
 LANGUAGE sql
 STABLE
AS $function$ SELECT (now() AT TIME ZONE 'UTC')::date $function$;

CREATE OR REPLACE FUNCTION sluice.quota_used(p_tenant text)
 RETURNS TABLE(attempts bigint, fuel bigint, egress_bytes bigint)
 LANGUAGE sql
 STABLE
AS $function$
    SELECT CASE WHEN t.quota_day = sluice.quota_today() THEN t.day_attempts ELSE 0 END,
           coalesce(u.fuel, 0)::int8, coalesce(u.egress, 0)::int8
    FROM sluice.tenants t
    CROSS JOIN LATERAL (
        SELECT sum(h.fuel) AS fuel, sum(h.http_bytes_out + h.http_bytes_in) AS egress
        FROM sluice.usage_hourly h
        WHERE h.tenant = t.id
          AND h.hour >= sluice.quota_today()::timestamp AT TIME ZONE 'UTC'
          AND (t.max_fuel_per_day IS NOT NULL OR t.max_egress_bytes_per_day IS NOT NULL)
    ) u
    WHERE t.id = p_tenant
$function$;

CREATE OR REPLACE FUNCTION sluice.send_event(tenant text, event_type text, payload jsonb, idempotency_key text DEFAULT NULL::text, traceparent text DEFAULT NULL::text, tracestate text DEFAULT NULL::text)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_variable
DECLARE
    v_limit bigint;
    v_id    bigint;
    v_body  bytea;
BEGIN
    SELECT coalesce(t.max_payload_bytes,
                    nullif(current_setting('sluice.default_max_payload_bytes', true), '')::bigint,
                    1048576)
      INTO v_limit
      FROM sluice.tenants t WHERE t.id = send_event.tenant;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown tenant "%": create it first (sluice tenants create %)',
                send_event.tenant, send_event.tenant
            USING ERRCODE = 'foreign_key_violation', COLUMN = 'tenant';
    END IF;
    IF send_event.event_type IS NULL
       OR send_event.event_type !~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$' THEN
        RAISE EXCEPTION 'invalid event type "%": 1 to 128 of letters, digits, `_`, `.` and `-`, not starting with `.` or `-`',
                send_event.event_type
            USING ERRCODE = 'check_violation', COLUMN = 'event_type';
    END IF;
    IF send_event.idempotency_key IS NOT NULL THEN
        -- Serialise senders of one key: the second waits, then finds the first's event.
        PERFORM pg_advisory_xact_lock(hashtextextended(
            'sluice.send_event/' || send_event.tenant || '/' || send_event.idempotency_key, 0));
        SELECT e.id INTO v_id FROM sluice.webhook_events e
        WHERE e.tenant = send_event.tenant AND e.idempotency_key = send_event.idempotency_key;
        IF FOUND THEN
            RETURN v_id;
        END IF;
    END IF;
    v_id := nextval('sluice.webhook_events_id_seq');
    v_body := sluice.webhook_body(v_id, send_event.event_type, send_event.payload);
    IF octet_length(v_body) > v_limit THEN
        RAISE EXCEPTION 'event is % bytes, over the limit of % bytes: store large data elsewhere and pass a reference',
                octet_length(v_body), v_limit
            USING ERRCODE = 'program_limit_exceeded', COLUMN = 'payload';
    END IF;
    IF send_event.traceparent IS NOT NULL AND NOT sluice.valid_traceparent(send_event.traceparent) THEN
        RAISE EXCEPTION 'invalid traceparent: % is not a W3C traceparent (00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, lowercase, ids not all zero)',
                quote_literal(left(send_event.traceparent, 64))
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'traceparent';
    END IF;
    INSERT INTO sluice.webhook_events (id, tenant, event_type, body, idempotency_key,
                                       traceparent, tracestate)
    VALUES (v_id, send_event.tenant, send_event.event_type, v_body, send_event.idempotency_key,
            send_event.traceparent,
            CASE WHEN send_event.traceparent IS NOT NULL
                      AND sluice.valid_tracestate(send_event.tracestate)
                 THEN send_event.tracestate END);
    PERFORM sluice.webhook_enqueue(send_event.tenant, v_id, ARRAY(
        SELECT e.id FROM sluice.webhook_endpoints e
        WHERE e.tenant = send_event.tenant AND e.enabled
          AND sluice.webhook_matches(e.events, send_event.event_type)
        ORDER BY e.id));
    RETURN v_id;
END
$function$;

CREATE OR REPLACE FUNCTION sluice.signal(job_id bigint, name text, payload jsonb DEFAULT NULL::jsonb)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_variable
DECLARE
    v_state       sluice.job_state;
    v_waiting_for text;
    v_limit       bigint;
    v_size        bigint;
BEGIN
    IF signal.job_id IS NULL THEN
        RAISE EXCEPTION 'invalid job_id: must not be NULL'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'job_id';
    END IF;
    IF signal.name IS NULL OR char_length(signal.name) NOT BETWEEN 1 AND 128 THEN
        RAISE EXCEPTION 'invalid name: a signal name must be 1 to 128 characters, got %',
                coalesce(char_length(signal.name)::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'name';
    END IF;
    -- The row lock serialises this with the suspension statement (migration 0027's top).
    SELECT j.state, j.waiting_for,
           coalesce(t.max_payload_bytes,
                    nullif(current_setting('sluice.default_max_payload_bytes', true), '')::bigint,
                    1048576)
      INTO v_state, v_waiting_for, v_limit
    FROM sluice.jobs j LEFT JOIN sluice.tenants t ON t.id = j.tenant
    WHERE j.id = signal.job_id
    FOR UPDATE OF j;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % not found', signal.job_id
            USING ERRCODE = 'no_data_found', COLUMN = 'job_id';
    END IF;
    v_size := octet_length(signal.payload::text);
    IF v_size > v_limit THEN
        RAISE EXCEPTION 'signal payload is % bytes, over the limit of % bytes: store large data elsewhere and pass a reference',
                v_size, v_limit
            USING ERRCODE = 'program_limit_exceeded', COLUMN = 'payload',
                  DETAIL = v_size::text || '/' || v_limit::text;
    END IF;
    IF v_state IN ('completed', 'dead', 'cancelled') THEN
        RAISE EXCEPTION 'job % is %: a finished job takes no signals', signal.job_id, v_state
            USING ERRCODE = 'object_not_in_prerequisite_state', COLUMN = 'job_id',
                  DETAIL = v_state::text;
    END IF;
    INSERT INTO sluice.signals AS s (job_id, name, payload)
    VALUES (signal.job_id, signal.name, signal.payload);
    IF v_state = 'waiting' AND v_waiting_for = signal.name THEN
        UPDATE sluice.jobs j
        SET state = 'pending', run_at = now(), waiting_for = NULL, awaited = NULL,
            updated_at = now()
        WHERE j.id = signal.job_id;
        PERFORM pg_notify('sluice_jobs', '');
        RETURN true;
    END IF;
    RETURN false;
END
$function$;
REVOKE EXECUTE ON FUNCTION sluice.signal(job_id bigint, name text, payload jsonb) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sluice.valid_traceparent(p text)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT p IS NOT NULL
       AND (p ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
            OR (p ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-.*)?$'
                AND left(p, 2) NOT IN ('00', 'ff')))
       AND substr(p, 4, 32) <> repeat('0', 32)
       AND substr(p, 37, 16) <> repeat('0', 16)
$function$;

CREATE OR REPLACE FUNCTION sluice.valid_tracestate(p text)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT p IS NOT NULL AND char_length(p) <= 512
       AND cardinality(string_to_array(p, ',')) <= 32
       AND p ~ '^[ \t]*[a-z0-9*/@_-]+=[\x20-\x2b\x2d-\x3c\x3e-\x7e]*[\x21-\x2b\x2d-\x3c\x3e-\x7e]([ \t]*,[ \t]*([a-z0-9*/@_-]+=[\x20-\x2b\x2d-\x3c\x3e-\x7e]*[\x21-\x2b\x2d-\x3c\x3e-\x7e])?)*[ \t]*$'
$function$;

CREATE OR REPLACE FUNCTION sluice.wake_parent()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    UPDATE sluice.jobs p
    SET state = 'pending', run_at = least(p.run_at, now()), waiting_for = NULL,
        awaited = NULL, updated_at = now()
    WHERE p.id = NEW.parent_id AND p.state = 'waiting' AND NEW.id = ANY (p.awaited)
      AND NOT EXISTS (SELECT 1 FROM sluice.jobs c
                      WHERE c.id = ANY (p.awaited || ARRAY(
                                SELECT a.job_id FROM sluice.follow_up_aliases a
                                WHERE a.parent_id = p.id AND a.id = ANY (p.awaited)))
                        AND c.state NOT IN ('completed', 'dead', 'cancelled'));
    IF FOUND THEN
        PERFORM pg_notify('sluice_jobs', '');
    END IF;
    RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION sluice.webhook_body(p_id bigint, p_type text, p_payload jsonb)
 RETURNS bytea
 LANGUAGE sql
 STABLE
AS $function$
    SELECT convert_to(jsonb_build_object(
        'id', 'evt_' || p_id,
        'type', p_type,
        'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'data', coalesce(p_payload, 'null'::jsonb))::text, 'UTF8')
$function$;

CREATE OR REPLACE FUNCTION sluice.webhook_enqueue(p_tenant text, p_event bigint, p_endpoints bigint[])
 RETURNS bigint[]
 LANGUAGE plpgsql
AS $function$
DECLARE
    v_ids bigint[];
BEGIN
    WITH inserted AS (
        INSERT INTO sluice.jobs (tenant, job_type, payload, priority, max_attempts,
                                 traceparent, tracestate)
        SELECT p_tenant, 'sluice.webhook',
               convert_to(json_build_object('endpoint', e.id, 'event', p_event)::text, 'UTF8'),
               0, 1 + coalesce(cardinality(e.retry_schedule_ms), 7),
               ev.traceparent, ev.tracestate
        FROM unnest(p_endpoints) WITH ORDINALITY AS u(endpoint, ord)
        JOIN sluice.webhook_endpoints e ON e.id = u.endpoint AND e.tenant = p_tenant
        LEFT JOIN sluice.webhook_events ev ON ev.id = p_event
        ORDER BY u.ord
        RETURNING id
    )
    SELECT array_agg(id ORDER BY id) INTO v_ids FROM inserted;
    IF cardinality(v_ids) > 0 THEN
        PERFORM pg_notify('sluice_jobs', '');
    END IF;
    RETURN coalesce(v_ids, '{}');
END
$function$;

CREATE OR REPLACE FUNCTION sluice.webhook_matches(patterns text[], event_type text)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE
AS $function$
    SELECT EXISTS (
        SELECT 1 FROM unnest(patterns) AS p(pattern)
        WHERE p.pattern = '*'
           OR p.pattern = event_type
           OR (right(p.pattern, 2) = '.*'
               AND left(event_type, char_length(p.pattern) - 1) = left(p.pattern, -1))
    )
$function$;

CREATE OR REPLACE FUNCTION sluice.webhook_tenants_sealed_elsewhere(p_keys text[])
 RETURNS SETOF text
 LANGUAGE sql
 STABLE
AS $function$
    WITH RECURSIVE current_keys AS (
        (SELECT e.key_id FROM sluice.webhook_endpoints e ORDER BY e.key_id LIMIT 1)
        UNION ALL
        SELECT (SELECT e.key_id FROM sluice.webhook_endpoints e
                WHERE e.key_id > k.key_id ORDER BY e.key_id LIMIT 1)
        FROM current_keys k
        WHERE k.key_id IS NOT NULL
    ),
    previous_keys AS (
        (SELECT e.previous_key_id AS key_id FROM sluice.webhook_endpoints e
         WHERE e.previous_key_id IS NOT NULL ORDER BY e.previous_key_id LIMIT 1)
        UNION ALL
        SELECT (SELECT e.previous_key_id FROM sluice.webhook_endpoints e
                WHERE e.previous_key_id > k.key_id ORDER BY e.previous_key_id LIMIT 1)
        FROM previous_keys k
        WHERE k.key_id IS NOT NULL
    )
    -- The key ids not held, as an array: an index condition, so only the endpoints
    -- under them are read (none at all when the host holds every key id).
    SELECT e.tenant
    FROM sluice.webhook_endpoints e
    WHERE e.key_id = ANY (ARRAY(SELECT k.key_id FROM current_keys k
                                WHERE k.key_id <> ALL (COALESCE(p_keys, '{}'))))
    UNION
    SELECT e.tenant
    FROM sluice.webhook_endpoints e
    WHERE e.previous_key_id = ANY (ARRAY(SELECT k.key_id FROM previous_keys k
                                         WHERE k.key_id <> ALL (COALESCE(p_keys, '{}'))))
      AND e.previous_until > now()
$function$;


-- Triggers
-- --------
CREATE TRIGGER jobs_flow_delete AFTER DELETE ON sluice.jobs FOR EACH ROW WHEN (((old.flow_key IS NOT NULL) AND (old.state = 'running'::sluice.job_state))) EXECUTE FUNCTION sluice.flow_keys_follow();
CREATE TRIGGER jobs_flow_insert AFTER INSERT ON sluice.jobs FOR EACH ROW WHEN ((new.flow_key IS NOT NULL)) EXECUTE FUNCTION sluice.flow_keys_follow();
CREATE TRIGGER jobs_flow_update AFTER UPDATE OF state, flow_key ON sluice.jobs FOR EACH ROW WHEN ((((old.flow_key IS NOT NULL) AND (old.state = 'running'::sluice.job_state) AND (new.state <> 'running'::sluice.job_state)) OR ((new.flow_key IS NOT NULL) AND (new.state = 'pending'::sluice.job_state) AND ((old.state <> 'pending'::sluice.job_state) OR (old.flow_key IS DISTINCT FROM new.flow_key))))) EXECUTE FUNCTION sluice.flow_keys_follow();
CREATE TRIGGER jobs_notify_finished AFTER UPDATE OF state ON sluice.jobs FOR EACH ROW WHEN ((new.watched AND (new.finished_at IS NOT NULL) AND (old.finished_at IS NULL))) EXECUTE FUNCTION sluice.notify_finished();
CREATE TRIGGER jobs_wake_parent AFTER UPDATE OF state ON sluice.jobs FOR EACH ROW WHEN (((new.parent_id IS NOT NULL) AND (new.finished_at IS NOT NULL) AND (old.finished_at IS NULL))) EXECUTE FUNCTION sluice.wake_parent();


-- Comments
-- --------
COMMENT ON COLUMN sluice.job_types.max_snoozes IS 'Snoozes one job of this type may take (NULL: the host default, 25). See migrations/0031_max_snoozes.sql.';
COMMENT ON COLUMN sluice.jobs.watched IS 'A client waits for this job to finish: its finish notifies sluice_finished (migrations/0032_finish_watch.sql).';
COMMENT ON COLUMN sluice.tenants.max_journal_bytes IS 'Cap on one durable job''s journal, in bytes (NULL: the type''s journal_bytes or the host default). See migrations/0025_tenant_journal_cap.sql and docs/durable.md.';
COMMENT ON FUNCTION sluice.enqueue(tenant text, job_type text, payload jsonb, priority integer, run_at timestamp with time zone, idempotency_key text, max_attempts integer, key_scope text, concurrency_key text, traceparent text, tracestate text) IS 'Enqueue one Sluice job inside the caller''s transaction; returns the job id (the existing one for a duplicate idempotency key). See docs/enqueue-from-sql.md.';
COMMENT ON FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint) IS 'sluice.enqueue_jobs(...) for jobs without a parent (the form of migration 0011). See migrations/0014_follow_up_jobs.sql.';
COMMENT ON FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[]) IS 'sluice.enqueue_jobs(...) without concurrency keys (the form of migration 0014). See migrations/0024_flow_control.sql.';
COMMENT ON FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[], p_concurrency_key text[]) IS 'sluice.enqueue_jobs(...) without reserved ids (the form of migration 0024). See migrations/0027_durable_waits.sql.';
COMMENT ON FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[], p_concurrency_key text[], p_id bigint[]) IS 'sluice.enqueue_jobs(...) without trace context (the form of migration 0027). See migrations/0034_trace_context.sql.';
COMMENT ON FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[], p_concurrency_key text[], p_id bigint[], p_traceparent text[], p_tracestate text[]) IS 'The one INSERT into sluice.jobs: a batch of jobs as arrays, all or none, with idempotency keys, parents, concurrency keys, reserved ids, trace context and one wake-up notice. Used by the Rust enqueue, follow-up jobs, sluice.enqueue(...) and the scheduler. See migrations/0011_one_enqueue.sql, 0014_follow_up_jobs.sql, 0024_flow_control.sql, 0027_durable_waits.sql and 0034_trace_context.sql.';
COMMENT ON FUNCTION sluice.notify_finished() IS 'Trigger jobs_notify_finished: a watched job that finishes is announced on sluice_finished. See migrations/0032_finish_watch.sql.';
COMMENT ON FUNCTION sluice.payload_jsonb(p bytea) IS 'A job payload read as JSON, or NULL when the bytes are not UTF-8 JSON. See migrations/0019_ui_sessions.sql.';
COMMENT ON FUNCTION sluice.send_event(tenant text, event_type text, payload jsonb, idempotency_key text, traceparent text, tracestate text) IS 'Send a webhook event inside the caller''s transaction: one delivery job per matching, enabled endpoint of the tenant (the transactional outbox). Returns the event id. See docs/webhooks.md.';
COMMENT ON FUNCTION sluice.signal(job_id bigint, name text, payload jsonb) IS 'Send a signal to a job inside the caller''s transaction; wakes the job when it waits for that name (returns true then). See migrations/0027_durable_waits.sql and docs/durable.md.';
COMMENT ON FUNCTION sluice.valid_traceparent(p text) IS 'Whether a text is a W3C traceparent Sluice accepts. See migrations/0034_trace_context.sql.';
COMMENT ON FUNCTION sluice.valid_tracestate(p text) IS 'Whether a text is a W3C tracestate Sluice keeps (otherwise it is dropped). See migrations/0034_trace_context.sql.';
COMMENT ON FUNCTION sluice.wake_parent() IS 'Trigger jobs_wake_parent: a follow-up job that finishes wakes its waiting parent when it was the last job the parent awaits. See migrations/0028_wake_parent.sql.';
COMMENT ON TABLE sluice.attempt_logs IS 'The captured log of each attempt that produced output, masked and capped; deleted with its job.';
COMMENT ON TABLE sluice.flow_keys IS 'One row per (tenant, job type, concurrency key) in the flow lane: its running jobs, token bucket and when the claim should look at it next (NULL: at its limit or idle). See migrations/0024_flow_control.sql and docs/flow-control.md.';
COMMENT ON TABLE sluice.follow_up_aliases IS 'Reserved follow-up job ids that stand for the existing job their idempotency key named (await-jobs reads that job under the id). See migrations/0029_follow_up_aliases.sql.';
COMMENT ON TABLE sluice.journal IS 'The host calls a durable job''s guest observed, in order; deleted with its job.';
COMMENT ON TABLE sluice.journal_heads IS 'Per durable job: the pinned component and the journal''s size; deleted with its job.';
COMMENT ON TABLE sluice.signals IS 'Signals sent to jobs (sluice.signal), kept until an await-signal call takes them (consumed_seq); deleted with their job. See migrations/0027_durable_waits.sql.';
COMMENT ON TABLE sluice.ui_sessions IS 'Dashboard sign-ins: the SHA-256 of each cookie secret, the identity it was made from and the tenant it acts for.';
COMMENT ON TABLE sluice.usage_hourly IS 'Usage per tenant, job type and hour (UTC), added to by workers. See migrations/0033_usage_quotas.sql.';
COMMENT ON VIEW sluice.job_attempts IS 'Every attempt of every job: the history table plus the attempt a running or completed job holds on its row.';
