-- Migration 0002_queue (postgresql, up): the queue table (pause and resume), as Django's schema editor creates it.
-- Frozen: never edit this file; a change to the schema is a new migration.
-- The migration runs Django's operations; this is what they create (anole_jobs.sql() is built
-- from it, and a test compares the two schemas).
CREATE TABLE "anole_jobs_queue" (
    "name" text NOT NULL PRIMARY KEY,
    "paused_at" timestamp with time zone NULL
);
CREATE INDEX "anole_jobs_queue_name_e8c4be3a_like" ON "anole_jobs_queue" ("name" text_pattern_ops);
