-- Migration 0015_flow (postgresql, down): the flow columns and their indexes go.
-- Frozen: never edit this file once released; a change to the schema is a new migration.
DROP INDEX "anole_jobs_job_sequence";
DROP INDEX "anole_jobs_job_fair_key";
DROP INDEX "anole_jobs_job_fair";
ALTER TABLE "anole_jobs_job" DROP COLUMN "sequence_key";
ALTER TABLE "anole_jobs_job" DROP COLUMN "fair_order";
ALTER TABLE "anole_jobs_job" DROP COLUMN "fair_key";
