-- Migration 0016_deploys (postgresql, down): undoes 0016_deploys.up.
-- Frozen: never edit this file once released; a change to the schema is a new migration.
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
CREATE OR REPLACE FUNCTION "anole_jobs_claim_limited"(p_queue text,
    p_kinds text[], p_limit integer, p_now timestamptz, p_lease_until timestamptz,
    p_worker text, p_concurrency integer, p_rate_count integer, p_rate_seconds double precision)
RETURNS TABLE (id bigint, kind text, queue text, args jsonb, meta jsonb, priority smallint, attempt integer, max_attempts integer, errors jsonb, created_us bigint, scheduled_us bigint, finished_us bigint, unique_key text, claim_token bigint, workflow_id text, step_name text, held boolean, reopens_at double precision)
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $body$
#variable_conflict use_column
DECLARE
    v_set_concurrency integer;
    v_set_rate_count integer;
    v_set_rate_seconds double precision;
    v_stored text;
    v_concurrency integer;
    v_rate_count integer;
    v_rate_seconds double precision;
    v_now_s double precision := extract(epoch FROM p_now)::double precision;
    v_running bigint := 0;
    v_recent double precision[] := '{}';
    v_counted double precision[];
    v_room bigint;
    v_taken bigint := 0;
    v_is_held boolean := false;
    v_reopens double precision;
    v_setting text;  -- set_config's result (an assignment runs as a simple expression, no query)
BEGIN
    -- The upsert locks the queue's row until commit and returns it.
    INSERT INTO "anole_jobs_limit" (queue, claims) VALUES (p_queue, '{}')
        ON CONFLICT (queue) DO UPDATE SET queue = excluded.queue
        RETURNING global_concurrency, rate_count, rate_seconds, claims
        INTO v_set_concurrency, v_set_rate_count, v_set_rate_seconds, v_stored;
    -- Limits set at runtime in place of the settings' (Limits.overlay).
    v_concurrency := COALESCE(v_set_concurrency, p_concurrency);
    IF v_set_rate_count IS NOT NULL AND v_set_rate_seconds IS NOT NULL THEN
        v_rate_count := v_set_rate_count;
        v_rate_seconds := v_set_rate_seconds;
    ELSE
        v_rate_count := p_rate_count;
        v_rate_seconds := p_rate_seconds;
    END IF;
    v_room := p_limit;
    IF v_concurrency IS NOT NULL THEN
        SELECT COUNT(*) INTO v_running FROM "anole_jobs_job" WHERE queue = p_queue AND state = 'running';
        v_room := LEAST(v_room, v_concurrency - v_running);
    END IF;
    IF v_rate_count IS NOT NULL THEN
        -- The claims of the last two periods (Planner: a claimer whose clock read earlier
        -- still finds every claim of its own window); this claim counts those of one.
        SELECT COALESCE(array_agg(t ORDER BY t), '{}') INTO v_recent FROM (
            SELECT v::double precision AS t
            FROM jsonb_array_elements_text(COALESCE(v_stored::jsonb -> '', '[]')) AS e(v)) AS w
            WHERE t > v_now_s - 2 * v_rate_seconds;
        v_room := LEAST(v_room, v_rate_count - cardinality(
            ARRAY(SELECT t FROM unnest(v_recent) AS u(t) WHERE t > v_now_s - v_rate_seconds)));
    END IF;
    v_room := GREATEST(v_room, 0);
    IF v_room > 0 THEN
        v_setting := set_config('anole_jobs.stats_written', 'on', true);
        RETURN QUERY WITH claimed AS (UPDATE "anole_jobs_job" AS j SET state = 'running',
            attempt = j.attempt + 1, claim_token = j.claim_token + 1, attempted_at = p_now,
            lease_until = p_lease_until, claimed_by = p_worker
            WHERE j.id = ANY(ARRAY(SELECT id FROM "anole_jobs_job"
                WHERE state = 'available' AND queue = p_queue
                AND (p_kinds IS NULL OR kind = ANY(p_kinds))
                AND NOT EXISTS (SELECT 1 FROM "anole_jobs_queue"
                    WHERE name = p_queue AND paused_at IS NOT NULL)
                ORDER BY priority DESC, scheduled_at, id LIMIT v_room FOR UPDATE SKIP LOCKED))
            RETURNING j.id, j.kind, j.queue, j.args, j.meta, j.priority, j.attempt, j.max_attempts, j.errors, (extract(epoch FROM j.created_at) * 1000000)::bigint, (extract(epoch FROM j.scheduled_at) * 1000000)::bigint, (extract(epoch FROM j.finished_at) * 1000000)::bigint, j.unique_key, j.claim_token, j.workflow_id, j.step_name)
        SELECT *, NULL::boolean, NULL::double precision FROM claimed;
        GET DIAGNOSTICS v_taken = ROW_COUNT;
        v_setting := set_config('anole_jobs.stats_written', '', true);
        IF v_taken > 0 THEN
            INSERT INTO "anole_jobs_stat" (queue, minute, started, completed, retried, dead, total_ms, max_ms, h0, h1, h2, h3, h4, h5, h6, h7, h8, h9, h10, h11, h12, h13, h14, h15, h16, h17, h18)
            VALUES (p_queue, div(extract(epoch FROM p_now), 60)::bigint, v_taken, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
        END IF;
    END IF;
    IF v_rate_count IS NOT NULL AND v_taken > 0 THEN
        SELECT array_agg(t ORDER BY t) INTO v_recent FROM (SELECT unnest(v_recent) AS t
            UNION ALL SELECT v_now_s FROM generate_series(1, v_taken)) AS w;
    END IF;
    -- Every job the room allowed was taken and the room was below what was asked: the next
    -- one is held (Planner.offer of one more candidate).
    IF (v_concurrency IS NOT NULL OR v_rate_count IS NOT NULL) AND v_taken = v_room
        AND v_room < p_limit THEN
        v_is_held := true;
        IF v_rate_count IS NOT NULL THEN
            v_counted := ARRAY(SELECT t FROM unnest(v_recent) AS u(t)
                WHERE t > v_now_s - v_rate_seconds ORDER BY t);
            IF cardinality(v_counted) >= v_rate_count
                AND (v_concurrency IS NULL OR v_running + v_taken < v_concurrency) THEN
                -- Held by the rate alone: room comes back when the oldest claim leaves.
                v_reopens := v_counted[cardinality(v_counted) - v_rate_count + 1]
                    + v_rate_seconds;
            END IF;
        END IF;
    END IF;
    IF v_rate_count IS NOT NULL THEN
        -- The window written back: every partition's claims of the last two periods.
        UPDATE "anole_jobs_limit" SET claims = COALESCE((
            SELECT jsonb_object_agg(k, ts)::text FROM (
                SELECT k, jsonb_agg(to_jsonb(t) ORDER BY t) AS ts FROM (
                    SELECT e.key AS k, v::double precision AS t
                    FROM jsonb_each(v_stored::jsonb) AS e,
                        jsonb_array_elements_text(e.value) AS a(v)
                    WHERE e.key <> ''
                    UNION ALL SELECT '', t FROM unnest(v_recent) AS u(t)
                ) AS w WHERE t > v_now_s - 2 * v_rate_seconds GROUP BY k) AS g), '{}')
        WHERE queue = p_queue;
    END IF;
    RETURN QUERY SELECT NULL::bigint, NULL::text, NULL::text, NULL::jsonb, NULL::jsonb, NULL::smallint, NULL::integer, NULL::integer, NULL::jsonb, NULL::bigint, NULL::bigint, NULL::bigint, NULL::text, NULL::bigint, NULL::text, NULL::text, v_is_held, v_reopens;
END
$body$;
ALTER TABLE "anole_jobs_job" DROP COLUMN "version";
