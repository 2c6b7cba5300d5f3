-- Migration 0011_enqueue_indexes (sqlite, up): fewer index entries per enqueued and claimed job.
-- Frozen: never edit this file; a change to the schema is a new migration.
-- The admin indexes by queue and by kind leave out the jobs waiting to be claimed and the
-- running ones (the claim and rescue indexes hold them), the one by state the running ones.
-- The unique constraint on "unique_lock" stays as it is: code of the release before this one
-- inserts with ON CONFLICT ("unique_lock"), which needs it (rolling deploys, docs/upgrading.md).
DROP INDEX "anole_jobs_job_state";
CREATE INDEX "anole_jobs_job_state" ON "anole_jobs_job" ("state", "id") WHERE NOT ("state" = 'running');
DROP INDEX "anole_jobs_job_queue";
CREATE INDEX "anole_jobs_job_queue" ON "anole_jobs_job" ("queue", "state", "id") WHERE NOT ("state" IN ('available', 'running'));
DROP INDEX "anole_jobs_job_kind";
CREATE INDEX "anole_jobs_job_kind" ON "anole_jobs_job" ("kind", "id") WHERE NOT ("state" IN ('available', 'running'));
