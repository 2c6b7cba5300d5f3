-- Migration 0013_durable (postgresql, up): durable steps, sleeps and signals, as Django's schema editor adds them.
-- Frozen: never edit this file once released; a change to the schema is a new migration.
-- The migration runs Django's operations; this is what they create (anole_jobs.sql() is built
-- from it, and a test compares the two schemas). Four nullable columns: no row is rewritten.
ALTER TABLE "anole_jobs_job" ADD COLUMN "steps" jsonb NULL;
ALTER TABLE "anole_jobs_job" ADD COLUMN "signals" jsonb NULL;
ALTER TABLE "anole_jobs_job" ADD COLUMN "signal_deadlines" jsonb NULL;
ALTER TABLE "anole_jobs_job" ADD COLUMN "awaiting" text NULL;
