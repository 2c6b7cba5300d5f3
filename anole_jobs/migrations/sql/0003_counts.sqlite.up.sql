-- Migration 0003_counts (sqlite, up): the job counts: the count table, the triggers on the job table that keep it, and the count of the jobs already there.
-- Frozen: never edit this file; a change to the schema is a new migration.
CREATE TABLE "anole_jobs_count" (
    "queue" text NOT NULL,
    "state" varchar(16) NOT NULL,
    "n" integer NOT NULL,
    PRIMARY KEY ("queue", "state")
) WITHOUT ROWID;
CREATE TRIGGER "anole_jobs_count_insert" AFTER INSERT ON "anole_jobs_job" BEGIN
    INSERT INTO "anole_jobs_count" (queue, state, n) VALUES (NEW.queue, NEW.state, 1)
        ON CONFLICT (queue, state) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER "anole_jobs_count_update" AFTER UPDATE OF queue, state ON "anole_jobs_job" WHEN OLD.queue IS NOT NEW.queue OR OLD.state IS NOT NEW.state BEGIN
    INSERT INTO "anole_jobs_count" (queue, state, n) VALUES (OLD.queue, OLD.state, -1)
        ON CONFLICT (queue, state) DO UPDATE SET n = n - 1;
    INSERT INTO "anole_jobs_count" (queue, state, n) VALUES (NEW.queue, NEW.state, 1)
        ON CONFLICT (queue, state) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER "anole_jobs_count_delete" AFTER DELETE ON "anole_jobs_job" BEGIN
    INSERT INTO "anole_jobs_count" (queue, state, n) VALUES (OLD.queue, OLD.state, -1)
        ON CONFLICT (queue, state) DO UPDATE SET n = n - 1;
END;
INSERT INTO "anole_jobs_count" (queue, state, n) SELECT queue, state, COUNT(*) FROM "anole_jobs_job" GROUP BY queue, state;
