-- Migration 0005_workflows (sqlite, up): workflows: a step's columns on the job table, the workflow and dependency tables, as Django's schema editor creates them.
-- Frozen: never edit this file; a change to the schema is a new migration.
-- The migration runs Django's operations; this is what they create (anole_jobs.sql() is built
-- from it, and a test compares the two schemas).
ALTER TABLE "anole_jobs_job" ADD COLUMN "workflow_id" text NULL;
ALTER TABLE "anole_jobs_job" ADD COLUMN "step_name" text NULL;
ALTER TABLE "anole_jobs_job" ADD COLUMN "waiting_on" integer NULL;
ALTER TABLE "anole_jobs_job" ADD COLUMN "ignore_failed" bool NULL;
ALTER TABLE "anole_jobs_job" ADD COLUMN "ready_delay" bigint NULL;
ALTER TABLE "anole_jobs_job" ADD COLUMN "cancelled_by" bigint NULL;
CREATE INDEX "anole_jobs_job_workflow" ON "anole_jobs_job" ("workflow_id", "id") WHERE "workflow_id" IS NOT NULL;
CREATE TABLE "anole_jobs_workflow" ("id" text NOT NULL PRIMARY KEY, "name" text NOT NULL, "created_at" datetime NOT NULL, "cancelled" bool NOT NULL);
CREATE TABLE "anole_jobs_dependency" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "job_id" bigint NOT NULL, "dependency_id" bigint NOT NULL);
CREATE INDEX "anole_jobs_dep_dependency" ON "anole_jobs_dependency" ("dependency_id");
CREATE INDEX "anole_jobs_dep_job" ON "anole_jobs_dependency" ("job_id");
