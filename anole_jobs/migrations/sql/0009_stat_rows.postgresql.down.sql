-- Migration 0009_stat_rows (postgresql, down): undoes 0009_stat_rows.up.
-- Frozen: never edit this file; a change to the schema is a new migration.
DROP FUNCTION IF EXISTS "anole_jobs_claim"(text, text[], integer, timestamptz, timestamptz, text);
DROP FUNCTION IF EXISTS "anole_jobs_finish"(jsonb, text);
CREATE OR REPLACE FUNCTION "anole_jobs_stat_runs"() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
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
