-- Migration 0015_flow (sqlite, up): fair flow, sequences and debounce.
-- Frozen: never edit this file once released; a change to the schema is a new migration.
-- A job's fairness value and turn (in a queue with fairness) and its sequence (a kind with
-- one): three nullable columns, so adding them rewrites no row; the indexes hold only the
-- jobs that have them, so a plain job's enqueue and claim never touch them.
ALTER TABLE "anole_jobs_job" ADD COLUMN "fair_key" text NULL;
ALTER TABLE "anole_jobs_job" ADD COLUMN "fair_order" real NULL;
ALTER TABLE "anole_jobs_job" ADD COLUMN "sequence_key" text NULL;
-- fair claim: a fair queue's available jobs by priority DESC, turn, id
CREATE INDEX "anole_jobs_job_fair" ON "anole_jobs_job" ("queue", "priority" DESC, "fair_order", "id") WHERE ("fair_order" IS NOT NULL AND "state" = 'available');
-- the latest turn of each fairness value with a job waiting or running
CREATE INDEX "anole_jobs_job_fair_key" ON "anole_jobs_job" ("queue", "fair_key", "fair_order") WHERE ("fair_order" IS NOT NULL AND "state" IN ('pending', 'scheduled', 'available', 'running', 'retrying'));
-- the first job of a sequence that has not ended
CREATE INDEX "anole_jobs_job_sequence" ON "anole_jobs_job" ("sequence_key", "id") WHERE ("sequence_key" IS NOT NULL AND "state" IN ('pending', 'scheduled', 'available', 'running', 'retrying'));
