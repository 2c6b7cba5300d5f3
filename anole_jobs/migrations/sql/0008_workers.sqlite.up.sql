-- Migration 0008_workers (sqlite, up): the worker table, as Django's schema editor creates it.
-- Frozen: never edit this file; a change to the schema is a new migration.
-- The migration runs Django's operations; this is what they create (anole_jobs.sql() is built
-- from it, and a test compares the two schemas).
CREATE TABLE "anole_jobs_worker" (
    "id" text NOT NULL PRIMARY KEY,
    "host" text NOT NULL,
    "pid" bigint NOT NULL,
    "started_at" datetime NOT NULL,
    "last_seen" datetime NOT NULL,
    "expires_at" datetime NOT NULL,
    "info" text NOT NULL CHECK ((JSON_VALID("info") OR "info" IS NULL))
);
