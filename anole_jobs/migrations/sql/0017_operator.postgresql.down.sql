-- Migration 0017_operator (postgresql, down): back to 0016.
DROP TABLE "anole_jobs_audit";
ALTER TABLE "anole_jobs_worker" DROP COLUMN "control";
