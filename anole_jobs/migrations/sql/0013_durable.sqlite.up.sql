-- Migration 0013_durable (sqlite, up): durable steps, sleeps and signals, as Django's schema editor adds them.
-- Frozen: never edit this file once released; a change to the schema is a new migration.
-- The migration runs Django's operations; this is what they create (anole_jobs.sql() is built
-- from it, and a test compares the two schemas). Four nullable columns: no row is rewritten.
ALTER TABLE "anole_jobs_job" ADD COLUMN "steps" text NULL CHECK ((JSON_VALID("steps") OR "steps" IS NULL));
ALTER TABLE "anole_jobs_job" ADD COLUMN "signals" text NULL CHECK ((JSON_VALID("signals") OR "signals" IS NULL));
ALTER TABLE "anole_jobs_job" ADD COLUMN "signal_deadlines" text NULL CHECK ((JSON_VALID("signal_deadlines") OR "signal_deadlines" IS NULL));
ALTER TABLE "anole_jobs_job" ADD COLUMN "awaiting" text NULL;
