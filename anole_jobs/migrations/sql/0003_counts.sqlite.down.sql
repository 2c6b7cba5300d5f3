-- Migration 0003_counts (sqlite, down): undoes 0003_counts.up.
-- Frozen: never edit this file; a change to the schema is a new migration.
DROP TRIGGER IF EXISTS "anole_jobs_count_insert";
DROP TRIGGER IF EXISTS "anole_jobs_count_update";
DROP TRIGGER IF EXISTS "anole_jobs_count_delete";
DROP TABLE IF EXISTS "anole_jobs_count";
