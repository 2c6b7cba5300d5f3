-- Migration 0008_workers (postgresql, up): the worker table, as Django's schema editor creates it.
-- Frozen: never edit this file; a change to the schema is a new migration.
-- The migration runs Django's operations; this is what they create (anole_jobs.sql() is built
-- from it, and a test compares the two schemas).
CREATE TABLE "anole_jobs_worker" (
    "id" text NOT NULL PRIMARY KEY,
    "host" text NOT NULL,
    "pid" bigint NOT NULL,
    "started_at" timestamp with time zone NOT NULL,
    "last_seen" timestamp with time zone NOT NULL,
    "expires_at" timestamp with time zone NOT NULL,
    "info" jsonb NOT NULL
);
CREATE INDEX "anole_jobs_worker_id_6bcf8c9a_like" ON "anole_jobs_worker" ("id" text_pattern_ops);
