-- Migration 0012_unique_lock (postgresql, up): the unique constraint on "unique_lock" again,
-- where the first form of 0011 had replaced it with a partial unique index.
-- Frozen: never edit this file; a change to the schema is a new migration.
-- Code of the release before 0011 inserts with ON CONFLICT ("unique_lock"), which only a
-- unique index without a predicate satisfies; this release's ON CONFLICT ("unique_lock")
-- WHERE "unique_lock" IS NOT NULL works with either. A database migrated with 0011 as it is
-- now (or installed fresh) already has the constraint, and this does nothing.
-- The new index is built first (writes to the job table wait, reads go on), then the
-- partial one is swapped for it (reads wait too, until this migration commits).
DO $body$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index
               WHERE indexrelid = to_regclass('"anole_jobs_job_unique_lock"')
               AND indpred IS NOT NULL) THEN
        CREATE UNIQUE INDEX "anole_jobs_job_unique_lock_full" ON "anole_jobs_job" ("unique_lock");
        DROP INDEX "anole_jobs_job_unique_lock";
        ALTER TABLE "anole_jobs_job" ADD CONSTRAINT "anole_jobs_job_unique_lock"
            UNIQUE USING INDEX "anole_jobs_job_unique_lock_full";
    END IF;
END
$body$;
