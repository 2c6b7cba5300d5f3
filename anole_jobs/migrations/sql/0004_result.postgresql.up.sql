-- Migration 0004_result (postgresql, up): the job's result column, as Django's schema editor adds it.
-- Frozen: never edit this file; a change to the schema is a new migration.
-- The migration runs Django's operations; this is what they create (anole_jobs.sql() is built
-- from it, and a test compares the two schemas).
ALTER TABLE "anole_jobs_job" ADD COLUMN "result" jsonb NULL;
