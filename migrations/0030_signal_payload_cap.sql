-- Sluice schema, part 30: a signal's payload is capped like the payload of a job of the
-- same tenant (issue #43). sluice.signal(...) of migration 0027 stored any payload the
-- caller sent (up to the HTTP body limit through the API, unbounded in SQL), and the
-- awaiting run journals it: a tenant could grow the database and the journal past the
-- caps its own enqueues obey.
--
-- * sluice.signal(job_id, name, payload): as in migration 0027, and a payload whose JSON
--   text is over the job's tenant's max_payload_bytes, else the database setting
--   `sluice.default_max_payload_bytes`, else 1 MiB (the rule of sluice.enqueue and
--   sluice.send_event) is refused: SQLSTATE 54000 (program_limit_exceeded), COLUMN
--   payload, DETAIL '<size>/<limit>'. Nothing is stored or woken.
-- * The host's CLI and HTTP apply its own default (`--max-payload-bytes`) to tenants
--   without a cap first (host/store/sql/waits/send_signal.sql).
--
-- Upgrading a live database: a replaced function; its signature and grants are kept.

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
