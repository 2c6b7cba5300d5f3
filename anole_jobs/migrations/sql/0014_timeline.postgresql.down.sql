-- Migration 0014_timeline (postgresql, down): undoes 0014_timeline.up (the finish function of 0009).
-- Frozen: never edit this file once released; a change to the schema is a new migration.
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
ALTER TABLE "anole_jobs_job" DROP COLUMN "attempts";
ALTER TABLE "anole_jobs_job" DROP COLUMN "logs";
ALTER TABLE "anole_jobs_job" DROP COLUMN "progress";
