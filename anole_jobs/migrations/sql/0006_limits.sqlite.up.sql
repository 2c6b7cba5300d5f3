-- Migration 0006_limits (sqlite, up): the queue limits table, as Django's schema editor creates it.
-- Frozen: never edit this file; a change to the schema is a new migration.
-- The migration runs Django's operations; this is what they create (anole_jobs.sql() is built
-- from it, and a test compares the two schemas).
CREATE TABLE "anole_jobs_limit" ("queue" text NOT NULL PRIMARY KEY, "global_concurrency" integer NULL, "rate_count" integer NULL, "rate_seconds" real NULL, "claims" text NOT NULL);
