-- Migration 0016_deploys (sqlite, down): undoes 0016_deploys.up.
-- Frozen: never edit this file once released; a change to the schema is a new migration.
ALTER TABLE "anole_jobs_job" DROP COLUMN "version";
