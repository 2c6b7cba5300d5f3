-- Migration 0011_enqueue_indexes (postgresql, down): undoes 0011_enqueue_indexes.up.
-- Frozen: never edit this file; a change to the schema is a new migration.
DROP INDEX "anole_jobs_job_state";
CREATE INDEX "anole_jobs_job_state" ON "anole_jobs_job" ("state", "id");
DROP INDEX "anole_jobs_job_queue";
CREATE INDEX "anole_jobs_job_queue" ON "anole_jobs_job" ("queue", "state", "id");
DROP INDEX "anole_jobs_job_kind";
CREATE INDEX "anole_jobs_job_kind" ON "anole_jobs_job" ("kind", "id");
