-- Migration 0014_timeline (sqlite, down): undoes 0014_timeline.up.
-- Frozen: never edit this file once released; a change to the schema is a new migration.
ALTER TABLE "anole_jobs_job" DROP COLUMN "attempts";
ALTER TABLE "anole_jobs_job" DROP COLUMN "logs";
ALTER TABLE "anole_jobs_job" DROP COLUMN "progress";
