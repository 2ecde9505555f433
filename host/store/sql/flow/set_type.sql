-- Changes a job type's flow controls (docs/flow-control.md) in one statement: the fields
-- present in the patch are set (JSON null clears a limit), the others kept. When a
-- type-wide control is on afterwards (job_types.flow: paused, max_running or a rate),
-- the type's pending jobs of the main lane move to the keys' lane (flow_key ''), where
-- the claim applies it; the keys at their limit (or waiting for a token of a changed
-- bucket) are made ready, so a new limit takes effect at the next claim. A new rate starts with a full bucket. No row: unknown type.
-- $1 tenant (text), $2 name (text), $3 patch (jsonb: paused boolean, max_running,
-- max_running_per_key, rate_count, key_rate_count, max_snoozes (int4 or null),
-- rate_period_ms, key_rate_period_ms (int8 or null)).
WITH t AS (
    UPDATE sluice.job_types jt
    SET paused = coalesce(($3->>'paused')::boolean, jt.paused),
        max_running = CASE WHEN $3 ? 'max_running' THEN ($3->>'max_running')::int4
                           ELSE jt.max_running END,
        max_running_per_key = CASE WHEN $3 ? 'max_running_per_key'
                                   THEN ($3->>'max_running_per_key')::int4
                                   ELSE jt.max_running_per_key END,
        rate_count = CASE WHEN $3 ? 'rate_count' THEN ($3->>'rate_count')::int4
                          ELSE jt.rate_count END,
        rate_period_ms = CASE WHEN $3 ? 'rate_period_ms' THEN ($3->>'rate_period_ms')::int8
                              ELSE jt.rate_period_ms END,
        key_rate_count = CASE WHEN $3 ? 'key_rate_count' THEN ($3->>'key_rate_count')::int4
                              ELSE jt.key_rate_count END,
        key_rate_period_ms = CASE WHEN $3 ? 'key_rate_period_ms'
                                  THEN ($3->>'key_rate_period_ms')::int8
                                  ELSE jt.key_rate_period_ms END,
        max_snoozes = CASE WHEN $3 ? 'max_snoozes' THEN ($3->>'max_snoozes')::int4
                           ELSE jt.max_snoozes END,
        rate_tokens = CASE WHEN $3 ? 'rate_count' THEN NULL ELSE jt.rate_tokens END,
        rate_refilled_at = CASE WHEN $3 ? 'rate_count' THEN NULL ELSE jt.rate_refilled_at END,
        updated_at = now()
    WHERE jt.tenant = $1 AND jt.name = $2
    RETURNING jt.tenant, jt.name, jt.flow
),
moved AS (
    UPDATE sluice.jobs j SET flow_key = ''
    FROM t
    WHERE t.flow AND j.tenant = t.tenant AND j.state = 'pending' AND j.flow_key IS NULL
      AND j.job_type = t.name
    RETURNING j.id
),
readied AS (
    UPDATE sluice.flow_keys k
    SET ready_at = now(),
        tokens = CASE WHEN $3 ? 'key_rate_count' THEN NULL ELSE k.tokens END,
        refilled_at = CASE WHEN $3 ? 'key_rate_count' THEN NULL ELSE k.refilled_at END
    FROM t
    WHERE k.tenant = t.tenant AND k.job_type = t.name
      AND ((k.ready_at IS NULL AND k.running > 0)
           OR ($3 ? 'key_rate_count' AND k.ready_at > now()))
    RETURNING k.id
)
SELECT (SELECT count(*) FROM moved) AS moved, (SELECT count(*) FROM readied) AS readied
FROM t
