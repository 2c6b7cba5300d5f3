-- Migration 0003_counts (postgresql, down): undoes 0003_counts.up.
-- Frozen: never edit this file; a change to the schema is a new migration.
DROP TRIGGER IF EXISTS "anole_jobs_count_insert" ON "anole_jobs_job";
DROP TRIGGER IF EXISTS "anole_jobs_count_update" ON "anole_jobs_job";
DROP TRIGGER IF EXISTS "anole_jobs_count_delete" ON "anole_jobs_job";
DROP TRIGGER IF EXISTS "anole_jobs_count_truncate" ON "anole_jobs_job";
DROP FUNCTION IF EXISTS "anole_jobs_count_jobs"();
DROP TABLE IF EXISTS "anole_jobs_count";
