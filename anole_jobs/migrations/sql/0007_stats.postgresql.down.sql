-- Migration 0007_stats (postgresql, down): undoes 0007_stats.up.
-- Frozen: never edit this file; a change to the schema is a new migration.
DROP TRIGGER IF EXISTS "anole_jobs_stat_runs" ON "anole_jobs_job";
DROP FUNCTION IF EXISTS "anole_jobs_stat_runs"();
DROP TABLE IF EXISTS "anole_jobs_stat";
