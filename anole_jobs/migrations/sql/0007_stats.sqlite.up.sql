-- Migration 0007_stats (sqlite, up): job statistics: the stat table and the trigger that keeps it.
-- Frozen: never edit this file; a change to the schema is a new migration.
CREATE TABLE "anole_jobs_stat" (
    "queue" text NOT NULL,
    "minute" integer NOT NULL,
    "started" integer NOT NULL,
    "completed" integer NOT NULL,
    "retried" integer NOT NULL,
    "dead" integer NOT NULL,
    "total_ms" integer NOT NULL,
    "max_ms" integer NOT NULL,
    "h0" integer NOT NULL,
    "h1" integer NOT NULL,
    "h2" integer NOT NULL,
    "h3" integer NOT NULL,
    "h4" integer NOT NULL,
    "h5" integer NOT NULL,
    "h6" integer NOT NULL,
    "h7" integer NOT NULL,
    "h8" integer NOT NULL,
    "h9" integer NOT NULL,
    "h10" integer NOT NULL,
    "h11" integer NOT NULL,
    "h12" integer NOT NULL,
    "h13" integer NOT NULL,
    "h14" integer NOT NULL,
    "h15" integer NOT NULL,
    "h16" integer NOT NULL,
    "h17" integer NOT NULL,
    "h18" integer NOT NULL,
    PRIMARY KEY ("queue", "minute")
) WITHOUT ROWID;
CREATE TRIGGER "anole_jobs_stat_runs" AFTER UPDATE OF state ON "anole_jobs_job" FOR EACH ROW
WHEN (NEW.state = 'running' AND OLD.state <> 'running') OR (OLD.state = 'running' AND (NEW.state IN ('completed', 'dead') OR (NEW.state IN ('retrying', 'available', 'scheduled') AND NEW.attempt = OLD.attempt AND json_array_length(NEW.errors) > json_array_length(OLD.errors))))
BEGIN
    INSERT INTO "anole_jobs_stat" (queue, minute, started, completed, retried, dead, total_ms, max_ms, h0, h1, h2, h3, h4, h5, h6, h7, h8, h9, h10, h11, h12, h13, h14, h15, h16, h17, h18)
    SELECT queue, minute, started, completed, retried, dead, COALESCE(ms, 0), COALESCE(ms, 0),
        coalesce(b = 0, 0), coalesce(b = 1, 0), coalesce(b = 2, 0), coalesce(b = 3, 0), coalesce(b = 4, 0), coalesce(b = 5, 0), coalesce(b = 6, 0), coalesce(b = 7, 0), coalesce(b = 8, 0), coalesce(b = 9, 0), coalesce(b = 10, 0), coalesce(b = 11, 0), coalesce(b = 12, 0), coalesce(b = 13, 0), coalesce(b = 14, 0), coalesce(b = 15, 0), coalesce(b = 16, 0), coalesce(b = 17, 0), coalesce(b = 18, 0)
    FROM (SELECT *, CASE WHEN ms IS NULL THEN NULL WHEN ms <= 1 THEN 0 WHEN ms <= 2 THEN 1 WHEN ms <= 5 THEN 2 WHEN ms <= 10 THEN 3 WHEN ms <= 20 THEN 4 WHEN ms <= 50 THEN 5 WHEN ms <= 100 THEN 6 WHEN ms <= 200 THEN 7 WHEN ms <= 500 THEN 8 WHEN ms <= 1000 THEN 9 WHEN ms <= 2000 THEN 10 WHEN ms <= 5000 THEN 11 WHEN ms <= 10000 THEN 12 WHEN ms <= 20000 THEN 13 WHEN ms <= 60000 THEN 14 WHEN ms <= 300000 THEN 15 WHEN ms <= 900000 THEN 16 WHEN ms <= 3600000 THEN 17 ELSE 18 END AS b FROM (SELECT NEW.queue AS queue,
        CAST(strftime('%s', CASE
            WHEN NEW.state = 'running' THEN NEW.attempted_at
            WHEN NEW.state IN ('completed', 'dead') THEN NEW.finished_at
            ELSE json_extract(NEW.errors, '$[#-1].at') END) AS INTEGER) / 60 AS minute,
        NEW.state = 'running' AS started,
        NEW.state = 'completed' AS completed,
        NEW.state NOT IN ('running', 'completed', 'dead') AS retried,
        NEW.state = 'dead' AS dead,
        CASE WHEN NEW.state = 'completed' THEN
            max(0, ((CAST(strftime('%s', NEW.finished_at) AS INTEGER) * 1000000 + CASE WHEN substr(NEW.finished_at, 20, 1) = '.' THEN CAST(substr(NEW.finished_at, 21, 6) AS INTEGER) ELSE 0 END) - (CAST(strftime('%s', NEW.attempted_at) AS INTEGER) * 1000000 + CASE WHEN substr(NEW.attempted_at, 20, 1) = '.' THEN CAST(substr(NEW.attempted_at, 21, 6) AS INTEGER) ELSE 0 END) + 999) / 1000) END AS ms
        LIMIT 1 OFFSET 0) AS moved LIMIT 1 OFFSET 0) AS bucketed
    WHERE true
    ON CONFLICT (queue, minute) DO UPDATE SET started = started + excluded.started, completed = completed + excluded.completed, retried = retried + excluded.retried, dead = dead + excluded.dead, total_ms = total_ms + excluded.total_ms, max_ms = max(max_ms, excluded.max_ms), h0 = h0 + excluded.h0, h1 = h1 + excluded.h1, h2 = h2 + excluded.h2, h3 = h3 + excluded.h3, h4 = h4 + excluded.h4, h5 = h5 + excluded.h5, h6 = h6 + excluded.h6, h7 = h7 + excluded.h7, h8 = h8 + excluded.h8, h9 = h9 + excluded.h9, h10 = h10 + excluded.h10, h11 = h11 + excluded.h11, h12 = h12 + excluded.h12, h13 = h13 + excluded.h13, h14 = h14 + excluded.h14, h15 = h15 + excluded.h15, h16 = h16 + excluded.h16, h17 = h17 + excluded.h17, h18 = h18 + excluded.h18;
END;
