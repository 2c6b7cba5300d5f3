-- Migration 0014_timeline (sqlite, up): the job's progress, log and attempts.
-- Frozen: never edit this file once released; a change to the schema is a new migration.
-- Three nullable JSON columns, as Django's schema editor adds them: no row is rewritten.
ALTER TABLE "anole_jobs_job" ADD COLUMN "progress" text NULL CHECK ((JSON_VALID("progress") OR "progress" IS NULL));
ALTER TABLE "anole_jobs_job" ADD COLUMN "logs" text NULL CHECK ((JSON_VALID("logs") OR "logs" IS NULL));
ALTER TABLE "anole_jobs_job" ADD COLUMN "attempts" text NULL CHECK ((JSON_VALID("attempts") OR "attempts" IS NULL));
