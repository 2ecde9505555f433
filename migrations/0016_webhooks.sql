-- Sluice schema, part 16: durable signed webhooks (issue 19, docs/webhooks.md).
--
-- * sluice.webhook_endpoints: a tenant's receivers. The signing secret (`whsec_...`) is
--   sealed by the host with the secrets machinery (crate sluice-secrets: AES-256-GCM,
--   the tenant and `webhook-endpoint:<id>` bound in as associated data); the database
--   never sees it in clear. After `rotate-secret` the previous secret keeps signing
--   beside the new one until previous_until. retry_schedule_ms NULL = the default
--   schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h).
-- * sluice.webhook_events: what the application sent. body is the exact JSON every
--   attempt sends (byte-identical), built once by sluice.send_event.
-- * A delivery is a job of the reserved type `sluice.webhook` whose payload is
--   {"endpoint": <id>, "event": <id>} and nothing else: the host runs it (no component),
--   reading the endpoint's URL, filter, secret and state at send time. No job_types row
--   exists for it, so no enqueue surface but these functions can create one, and a user
--   type cannot take the name (the store refuses names starting with `sluice.`).
-- * sluice.send_event(...): the transactional outbox. In the caller's transaction it
--   stores the event and inserts one delivery per matching, enabled endpoint; a rollback
--   leaves nothing.
-- * sluice.claim(...): a host holding no secrets key cannot sign, so it leaves
--   deliveries pending, as it does for types granted secrets.
--
-- Upgrading a live database: two new tables, new functions, and CREATE OR REPLACE of
-- the claim (one more predicate). Running workers keep working; older binaries never
-- see a `sluice.webhook` job because no job_types row names it (they would fail it as an
-- unknown type: upgrade the workers before sending events).

CREATE TABLE sluice.webhook_endpoints (
    id                  bigserial   PRIMARY KEY,
    tenant              text        NOT NULL REFERENCES sluice.tenants (id) ON DELETE CASCADE,
    url                 text        NOT NULL
                        CONSTRAINT webhook_endpoints_url_length CHECK (char_length(url) BETWEEN 1 AND 2048),
    -- Event type patterns: `invoice.paid`, `invoice.*` (any type under `invoice.`), `*`.
    events              text[]      NOT NULL
                        CONSTRAINT webhook_endpoints_events_size
                        CHECK (cardinality(events) BETWEEN 1 AND 64 AND array_position(events, NULL) IS NULL),
    description         text        NOT NULL DEFAULT ''
                        CONSTRAINT webhook_endpoints_description_length CHECK (char_length(description) <= 1024),
    enabled             boolean     NOT NULL DEFAULT true,
    -- Why it was disabled (by its owner, or after a 410 Gone), shown by show/deliveries.
    disabled_reason     text,
    key_id              text        NOT NULL
                        CONSTRAINT webhook_endpoints_key_id_hex CHECK (key_id ~ '^[0-9a-f]{16}$'),
    nonce               bytea       NOT NULL
                        CONSTRAINT webhook_endpoints_nonce_length CHECK (octet_length(nonce) = 12),
    ciphertext          bytea       NOT NULL,
    previous_key_id     text        CONSTRAINT webhook_endpoints_previous_key_id_hex CHECK (previous_key_id ~ '^[0-9a-f]{16}$'),
    previous_nonce      bytea,
    previous_ciphertext bytea,
    previous_until      timestamptz,
    retry_schedule_ms   bigint[]
                        CONSTRAINT webhook_endpoints_retry_schedule
                        CHECK (cardinality(retry_schedule_ms) BETWEEN 0 AND 20
                               AND array_position(retry_schedule_ms, NULL) IS NULL),
    timeout_ms          integer     NOT NULL DEFAULT 15000
                        CONSTRAINT webhook_endpoints_timeout_range CHECK (timeout_ms BETWEEN 100 AND 300000),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT webhook_endpoints_previous_complete CHECK (
        (previous_key_id IS NULL) = (previous_nonce IS NULL)
        AND (previous_key_id IS NULL) = (previous_ciphertext IS NULL)
        AND (previous_key_id IS NULL) = (previous_until IS NULL))
);

CREATE INDEX webhook_endpoints_tenant_idx ON sluice.webhook_endpoints (tenant, id);

CREATE TABLE sluice.webhook_events (
    id              bigserial   PRIMARY KEY,
    tenant          text        NOT NULL REFERENCES sluice.tenants (id) ON DELETE CASCADE,
    event_type      text        NOT NULL
                    CONSTRAINT webhook_events_type_syntax CHECK (event_type ~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$'),
    body            bytea       NOT NULL,
    idempotency_key text        CONSTRAINT webhook_events_idempotency_key_length CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT webhook_events_tenant_key UNIQUE (tenant, idempotency_key)
);

-- Retention walks events by age.
CREATE INDEX webhook_events_created_idx ON sluice.webhook_events (created_at);

-- Whether an endpoint subscribed to `patterns` receives events of `event_type`: `*`
-- matches every type, `prefix.*` every type that starts with `prefix.`, anything else
-- only itself.
CREATE FUNCTION sluice.webhook_matches(patterns text[], event_type text)
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

-- The body every attempt of an event's deliveries sends, built once:
-- {"data": payload, "id": "evt_<n>", "timestamp": "<UTC, microseconds>", "type": ...}.
CREATE FUNCTION sluice.webhook_body(p_id bigint, p_type text, p_payload jsonb)
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

-- One delivery job per endpoint in p_endpoints (of p_tenant) for event p_event, due now,
-- with one attempt per step of the endpoint's schedule plus the first; one wake-up
-- notice. Returns the new job ids in endpoint order. Callers check the endpoints.
CREATE FUNCTION sluice.webhook_enqueue(p_tenant text, p_event bigint, p_endpoints bigint[])
 RETURNS bigint[]
 LANGUAGE plpgsql
AS $function$
DECLARE
    v_ids bigint[];
BEGIN
    WITH inserted AS (
        INSERT INTO sluice.jobs (tenant, job_type, payload, priority, max_attempts)
        SELECT p_tenant, 'sluice.webhook',
               convert_to(json_build_object('endpoint', e.id, 'event', p_event)::text, 'UTF8'),
               0, 1 + coalesce(cardinality(e.retry_schedule_ms), 7)
        FROM unnest(p_endpoints) WITH ORDINALITY AS u(endpoint, ord)
        JOIN sluice.webhook_endpoints e ON e.id = u.endpoint AND e.tenant = p_tenant
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

-- The transactional outbox: stores the event (its body is the JSON every attempt sends:
-- {"id": "evt_<n>", "type": ..., "timestamp": ..., "data": payload}) and enqueues one
-- delivery per enabled endpoint of the tenant whose filter matches, in the caller's
-- transaction. With an idempotency key already used by the tenant, returns that event's
-- id and enqueues nothing. Errors name the problem (unknown tenant, event type syntax,
-- body over the tenant's payload limit).
CREATE FUNCTION sluice.send_event(tenant text, event_type text, payload jsonb, idempotency_key text DEFAULT NULL)
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
    INSERT INTO sluice.webhook_events (id, tenant, event_type, body, idempotency_key)
    VALUES (v_id, send_event.tenant, send_event.event_type, v_body, send_event.idempotency_key);
    PERFORM sluice.webhook_enqueue(send_event.tenant, v_id, ARRAY(
        SELECT e.id FROM sluice.webhook_endpoints e
        WHERE e.tenant = send_event.tenant AND e.enabled
          AND sluice.webhook_matches(e.events, send_event.event_type)
        ORDER BY e.id));
    RETURN v_id;
END
$function$;

COMMENT ON FUNCTION sluice.send_event(text, text, jsonb, text) IS 'Send a webhook event inside the caller''s transaction: one delivery job per matching, enabled endpoint of the tenant (the transactional outbox). Returns the event id. See docs/webhooks.md.';

CREATE OR REPLACE FUNCTION sluice.claim(p_worker text, p_limit integer, p_lease_us bigint, p_tenants text[], p_job_types text[], p_max_contract smallint, p_secret_keys text[])
 RETURNS TABLE(id bigint, tenant text, job_type text, payload bytea, priority integer, attempt integer, max_attempts integer, lease_token uuid, locked_until timestamp with time zone)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_bitmapscan TO 'off'
 SET jit TO 'off'
AS $function$
#variable_conflict use_column
DECLARE
    -- The job types (tenant/name; a tenant id holds no `/`) this host must leave pending:
    -- those whose component targets a newer contract than it runs (for a newer host), and
    -- those granted secrets it cannot decrypt -- it holds no key (p_secret_keys empty),
    -- or a granted secret of the type's tenant is stored under a key id it does not hold.
    -- Found by the components_contract_idx and job_types_secrets_idx probes, empty (and
    -- free) when every host is current and holds the key.
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
                            AND s.key_id <> ALL (p_secret_keys))));
    -- Webhook deliveries are signed with sealed secrets: a host with no key leaves them.
    v_keyless boolean := COALESCE(cardinality(p_secret_keys), 0) = 0;
BEGIN
    PERFORM 1
    FROM sluice.tenants t
    WHERE t.max_running IS NOT NULL
      AND (p_tenants IS NULL OR t.id = ANY (p_tenants))
      AND EXISTS (SELECT 1 FROM sluice.jobs j
                  WHERE j.tenant = t.id AND j.state = 'pending' AND j.run_at <= now())
    ORDER BY t.id
    FOR NO KEY UPDATE OF t;

    RETURN QUERY
    WITH RECURSIVE pending_tenants AS (
        -- A loose index scan over jobs_claim_tenant_idx: one probe per tenant with
        -- pending rows, however deep each backlog is.
        (SELECT j.tenant FROM sluice.jobs j
         WHERE j.state = 'pending' AND p_tenants IS NULL
         ORDER BY j.tenant LIMIT 1)
        UNION ALL
        SELECT (SELECT j.tenant FROM sluice.jobs j
                WHERE j.state = 'pending' AND j.tenant > p.tenant
                ORDER BY j.tenant LIMIT 1)
        FROM pending_tenants p
        WHERE p.tenant IS NOT NULL
    ),
    tenant_list AS (
        SELECT p.tenant FROM pending_tenants p WHERE p.tenant IS NOT NULL
        UNION
        SELECT u.tenant FROM unnest(p_tenants) AS u(tenant)
    ),
    counted AS (
        SELECT tl.tenant, t.max_running,
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
               GREATEST(0, LEAST(p_limit, COALESCE(c.max_running - c.running, p_limit))) AS take
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
            WHERE j.tenant = b.tenant AND j.state = 'pending' AND j.run_at <= now()
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
                  j.max_attempts, j.lease_token, j.locked_until
    )
    SELECT c.id, c.tenant, c.job_type, c.payload, c.priority::integer, c.attempt,
           c.max_attempts, c.lease_token, c.locked_until
    FROM claimed c
    ORDER BY c.priority DESC, c.run_at, c.id;
END
$function$;
