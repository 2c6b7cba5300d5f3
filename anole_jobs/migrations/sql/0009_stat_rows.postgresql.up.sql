-- Migration 0009_stat_rows (postgresql, up): claims and finishes as PostgreSQL functions that write their own statistics.
-- Frozen: never edit this file; a change to the schema is a new migration.
CREATE OR REPLACE FUNCTION "anole_jobs_claim"(p_queue text, p_kinds text[],
    p_limit integer, p_now timestamptz, p_lease_until timestamptz, p_worker text)
RETURNS TABLE (id bigint, kind text, queue text, args jsonb, meta jsonb, priority smallint, attempt integer, max_attempts integer, errors jsonb, created_us bigint, scheduled_us bigint, finished_us bigint, unique_key text, claim_token bigint, workflow_id text, step_name text) LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $body$
#variable_conflict use_column
DECLARE
    n_claimed bigint;
    v_setting text;  -- set_config's result (an assignment runs as a simple expression, no query)
BEGIN
    v_setting := set_config('anole_jobs.stats_written', 'on', true);
    RETURN QUERY WITH claimed AS (UPDATE "anole_jobs_job" AS j SET state = 'running',
        attempt = j.attempt + 1, claim_token = j.claim_token + 1, attempted_at = p_now,
        lease_until = p_lease_until, claimed_by = p_worker
        WHERE j.id = ANY(ARRAY(SELECT id FROM "anole_jobs_job"
            WHERE state = 'available' AND queue = p_queue
            AND (p_kinds IS NULL OR kind = ANY(p_kinds))
            AND NOT EXISTS (SELECT 1 FROM "anole_jobs_queue" WHERE name = p_queue AND paused_at IS NOT NULL)
            ORDER BY priority DESC, scheduled_at, id LIMIT p_limit FOR UPDATE SKIP LOCKED))
        RETURNING j.id, j.kind, j.queue, j.args, j.meta, j.priority, j.attempt, j.max_attempts, j.errors, (extract(epoch FROM j.created_at) * 1000000)::bigint, (extract(epoch FROM j.scheduled_at) * 1000000)::bigint, (extract(epoch FROM j.finished_at) * 1000000)::bigint, j.unique_key, j.claim_token, j.workflow_id, j.step_name)
    SELECT * FROM claimed;
    GET DIAGNOSTICS n_claimed = ROW_COUNT;
    v_setting := set_config('anole_jobs.stats_written', '', true);
    IF n_claimed > 0 THEN
        INSERT INTO "anole_jobs_stat" (queue, minute, started, completed, retried, dead, total_ms, max_ms, h0, h1, h2, h3, h4, h5, h6, h7, h8, h9, h10, h11, h12, h13, h14, h15, h16, h17, h18)
        VALUES (p_queue, div(extract(epoch FROM p_now), 60)::bigint, n_claimed, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    END IF;
END
$body$;
CREATE OR REPLACE FUNCTION "anole_jobs_finish"(p_batch jsonb, p_channel text)
RETURNS TABLE (id bigint, state text) LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $body$
#variable_conflict use_column
DECLARE
    v_setting text;  -- set_config's result (an assignment runs as a simple expression, no query)
BEGIN
    v_setting := set_config('anole_jobs.stats_written', 'on', true);
    RETURN QUERY WITH f AS (SELECT (r->>0)::bigint AS id, (r->>1)::int AS attempt,
        (r->>2)::bigint AS token, r->>3 AS state, (r->>4)::timestamptz AS at,
        (r->>5)::timestamptz AS scheduled_at, NULLIF(r->6, 'null'::jsonb) AS error,
        (r->>7)::int AS give_back, (r->>8)::jsonb AS result, (r->>9)::timestamptz AS started_at
        FROM jsonb_array_elements(p_batch) AS e(r)),
    ended AS (UPDATE "anole_jobs_job" AS j SET state = f.state, lease_until = NULL,
        attempt = j.attempt - f.give_back,
        errors = CASE WHEN f.error IS NULL THEN j.errors
            ELSE j.errors || jsonb_build_array(f.error) END,
        finished_at = CASE WHEN f.state IN ('completed', 'cancelled', 'dead') THEN f.at ELSE j.finished_at END,
        scheduled_at = COALESCE(f.scheduled_at, j.scheduled_at),
        unique_lock = CASE WHEN f.state IN ('completed', 'cancelled', 'dead') AND j.unique_scope <> 'any'
            THEN NULL ELSE j.unique_lock END,
        result = CASE WHEN f.state = 'completed' THEN f.result ELSE j.result END,
        attempted_at = COALESCE(f.started_at, j.attempted_at)
        FROM f WHERE j.id = f.id AND j.attempt = f.attempt AND j.claim_token = f.token
        AND j.state = 'running'
        RETURNING j.id, j.state, j.queue, j.attempted_at, j.finished_at,
            f.error IS NOT NULL AND f.give_back = 0 AS failed, f.error ->> 'at' AS failed_at),
    counted AS (SELECT queue, minute, outcome, COUNT(*) AS n, COALESCE(SUM(ms), 0) AS total_ms,
            COALESCE(MAX(ms), 0) AS max_ms FROM (
        SELECT queue, div(extract(epoch FROM CASE WHEN state IN ('completed', 'dead')
                THEN finished_at ELSE failed_at::timestamptz END), 60)::bigint AS minute,
            CASE state WHEN 'completed' THEN width_bucket(ms - 1, '{1,2,5,10,20,50,100,200,500,1000,2000,5000,10000,20000,60000,300000,900000,3600000}'::bigint[])
                WHEN 'dead' THEN -2 ELSE -1 END AS outcome, ms
        FROM (SELECT queue, state, finished_at, failed_at,
                CASE WHEN state = 'completed' THEN GREATEST(0, ceil(extract(epoch FROM
                    finished_at - attempted_at) * 1000))::bigint END AS ms
            FROM ended WHERE state IN ('completed', 'dead') OR failed) AS r
        ) AS o GROUP BY queue, minute, outcome),
    stats AS (INSERT INTO "anole_jobs_stat" (queue, minute, started, completed, retried, dead, total_ms, max_ms, h0, h1, h2, h3, h4, h5, h6, h7, h8, h9, h10, h11, h12, h13, h14, h15, h16, h17, h18)
        SELECT queue, minute, 0, CASE WHEN outcome >= 0 THEN n ELSE 0 END,
            CASE WHEN outcome = -1 THEN n ELSE 0 END, CASE WHEN outcome = -2 THEN n ELSE 0 END,
            total_ms, max_ms, CASE WHEN outcome = 0 THEN n ELSE 0 END, CASE WHEN outcome = 1 THEN n ELSE 0 END, CASE WHEN outcome = 2 THEN n ELSE 0 END, CASE WHEN outcome = 3 THEN n ELSE 0 END, CASE WHEN outcome = 4 THEN n ELSE 0 END, CASE WHEN outcome = 5 THEN n ELSE 0 END, CASE WHEN outcome = 6 THEN n ELSE 0 END, CASE WHEN outcome = 7 THEN n ELSE 0 END, CASE WHEN outcome = 8 THEN n ELSE 0 END, CASE WHEN outcome = 9 THEN n ELSE 0 END, CASE WHEN outcome = 10 THEN n ELSE 0 END, CASE WHEN outcome = 11 THEN n ELSE 0 END, CASE WHEN outcome = 12 THEN n ELSE 0 END, CASE WHEN outcome = 13 THEN n ELSE 0 END, CASE WHEN outcome = 14 THEN n ELSE 0 END, CASE WHEN outcome = 15 THEN n ELSE 0 END, CASE WHEN outcome = 16 THEN n ELSE 0 END, CASE WHEN outcome = 17 THEN n ELSE 0 END, CASE WHEN outcome = 18 THEN n ELSE 0 END FROM counted),
    done AS (SELECT pg_notify(p_channel, CASE WHEN length(s) <= 7900 THEN s ELSE '' END)
        FROM (SELECT string_agg(id::text, ',') AS s FROM ended WHERE state IN ('completed', 'cancelled', 'dead')) AS t
        WHERE s IS NOT NULL AND p_channel IS NOT NULL)
    SELECT ended.id, ended.state::text FROM ended WHERE (SELECT COUNT(*) FROM done) >= 0;
    v_setting := set_config('anole_jobs.stats_written', '', true);
END
$body$;
CREATE OR REPLACE FUNCTION "anole_jobs_stat_runs"() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    IF current_setting('anole_jobs.stats_written', true) = 'on' THEN RETURN NULL; END IF;
    INSERT INTO "anole_jobs_stat" (queue, minute, started, completed, retried, dead, total_ms, max_ms, h0, h1, h2, h3, h4, h5, h6, h7, h8, h9, h10, h11, h12, h13, h14, h15, h16, h17, h18)
    SELECT queue, minute, SUM(started), SUM(completed), SUM(retried), SUM(dead),
        COALESCE(SUM(ms), 0), COALESCE(MAX(ms), 0), COUNT(*) FILTER (WHERE b = 0), COUNT(*) FILTER (WHERE b = 1), COUNT(*) FILTER (WHERE b = 2), COUNT(*) FILTER (WHERE b = 3), COUNT(*) FILTER (WHERE b = 4), COUNT(*) FILTER (WHERE b = 5), COUNT(*) FILTER (WHERE b = 6), COUNT(*) FILTER (WHERE b = 7), COUNT(*) FILTER (WHERE b = 8), COUNT(*) FILTER (WHERE b = 9), COUNT(*) FILTER (WHERE b = 10), COUNT(*) FILTER (WHERE b = 11), COUNT(*) FILTER (WHERE b = 12), COUNT(*) FILTER (WHERE b = 13), COUNT(*) FILTER (WHERE b = 14), COUNT(*) FILTER (WHERE b = 15), COUNT(*) FILTER (WHERE b = 16), COUNT(*) FILTER (WHERE b = 17), COUNT(*) FILTER (WHERE b = 18)
    FROM (
        SELECT queue, minute, started, completed, retried, dead, ms, CASE WHEN ms IS NULL THEN NULL WHEN ms <= 1 THEN 0 WHEN ms <= 2 THEN 1 WHEN ms <= 5 THEN 2 WHEN ms <= 10 THEN 3 WHEN ms <= 20 THEN 4 WHEN ms <= 50 THEN 5 WHEN ms <= 100 THEN 6 WHEN ms <= 200 THEN 7 WHEN ms <= 500 THEN 8 WHEN ms <= 1000 THEN 9 WHEN ms <= 2000 THEN 10 WHEN ms <= 5000 THEN 11 WHEN ms <= 10000 THEN 12 WHEN ms <= 20000 THEN 13 WHEN ms <= 60000 THEN 14 WHEN ms <= 300000 THEN 15 WHEN ms <= 900000 THEN 16 WHEN ms <= 3600000 THEN 17 ELSE 18 END AS b FROM (
            SELECT n.queue,
                floor(extract(epoch FROM CASE
                    WHEN n.state = 'running' THEN n.attempted_at
                    WHEN n.state IN ('completed', 'dead') THEN n.finished_at
                    ELSE (n.errors -> -1 ->> 'at')::timestamptz END) / 60)::bigint AS minute,
                (n.state = 'running')::int AS started,
                (n.state = 'completed')::int AS completed,
                (n.state NOT IN ('running', 'completed', 'dead'))::int AS retried,
                (n.state = 'dead')::int AS dead,
                CASE WHEN n.state = 'completed' THEN GREATEST(0, ceil(extract(epoch FROM
                    n.finished_at - n.attempted_at) * 1000))::bigint END AS ms
            FROM old_jobs AS o JOIN new_jobs AS n ON n.id = o.id
            WHERE (n.state = 'running' AND o.state <> 'running') OR (o.state = 'running' AND (n.state IN ('completed', 'dead') OR (n.state IN ('retrying', 'available', 'scheduled') AND n.attempt = o.attempt AND jsonb_array_length(n.errors) > jsonb_array_length(o.errors))))
            OFFSET 0
        ) AS moved
        OFFSET 0
    ) AS bucketed
    GROUP BY queue, minute;
    RETURN NULL;
END
$body$;
