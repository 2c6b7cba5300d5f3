-- Migration 0001_initial (sqlite, up): the job, leader and cron tables and the job table's indexes, as Django's schema editor creates them.
-- Frozen: never edit this file; a change to the schema is a new migration.
-- The migration runs Django's operations; this is what they create (anole_jobs.sql() is built
-- from it, and a test compares the two schemas).
CREATE TABLE "anole_jobs_job" (
    "id" integer NOT NULL PRIMARY KEY AUTOINCREMENT,
    "kind" text NOT NULL,
    "queue" text NOT NULL,
    "state" varchar(16) NOT NULL,
    "args" text NOT NULL CHECK ((JSON_VALID("args") OR "args" IS NULL)),
    "meta" text NOT NULL CHECK ((JSON_VALID("meta") OR "meta" IS NULL)),
    "errors" text NOT NULL CHECK ((JSON_VALID("errors") OR "errors" IS NULL)),
    "priority" smallint NOT NULL,
    "attempt" integer NOT NULL,
    "max_attempts" integer NOT NULL,
    "claim_token" bigint NOT NULL,
    "created_at" datetime NOT NULL,
    "scheduled_at" datetime NOT NULL,
    "attempted_at" datetime NULL,
    "finished_at" datetime NULL,
    "lease_until" datetime NULL,
    "claimed_by" text NULL,
    "unique_key" text NULL,
    "unique_scope" varchar(8) NOT NULL,
    "unique_lock" text NULL,
    CONSTRAINT "anole_jobs_job_unique_lock" UNIQUE ("unique_lock")
);
CREATE TABLE "anole_jobs_leader" (
    "name" text NOT NULL PRIMARY KEY,
    "holder" text NOT NULL,
    "expires_at" datetime NOT NULL
);
CREATE TABLE "anole_jobs_cron" (
    "name" text NOT NULL PRIMARY KEY,
    "last_tick_at" datetime NULL,
    "last_job_id" bigint NULL
);
CREATE INDEX "anole_jobs_job_claim" ON "anole_jobs_job" ("queue", "priority" DESC, "scheduled_at", "id") WHERE "state" = 'available';
CREATE INDEX "anole_jobs_job_stage" ON "anole_jobs_job" ("scheduled_at") WHERE "state" IN ('scheduled', 'retrying');
CREATE INDEX "anole_jobs_job_rescue" ON "anole_jobs_job" ("lease_until") WHERE "state" = 'running';
CREATE INDEX "anole_jobs_job_prune" ON "anole_jobs_job" ("state", "finished_at") WHERE "finished_at" IS NOT NULL;
CREATE INDEX "anole_jobs_job_state" ON "anole_jobs_job" ("state", "id");
CREATE INDEX "anole_jobs_job_queue" ON "anole_jobs_job" ("queue", "state", "id");
CREATE INDEX "anole_jobs_job_kind" ON "anole_jobs_job" ("kind", "id");
