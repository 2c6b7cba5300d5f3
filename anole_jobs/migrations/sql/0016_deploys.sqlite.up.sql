-- Migration 0016_deploys (sqlite, up): kind versions and payload references.
-- Frozen: never edit this file once released; a change to the schema is a new migration.
-- Each job keeps the version of its kind's args it was stored with; rows stored before are
-- version 1.
ALTER TABLE "anole_jobs_job" ADD COLUMN "version" smallint DEFAULT 1 NOT NULL;
