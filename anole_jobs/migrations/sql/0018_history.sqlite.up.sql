-- Migration 0018_history (sqlite, up): the statistics' hourly history.
-- Frozen: never edit this file once released; a change to the schema is a new migration.
-- One row per queue and hour (hours since 1970-01-01T00:00Z): the minutes of the stat table
-- summed by the leader once the hour has ended, kept long after the minutes are pruned.
CREATE TABLE "anole_jobs_stat_hour" (
    "queue" text NOT NULL,
    "hour" integer NOT NULL,
    "started" integer NOT NULL,
    "completed" integer NOT NULL,
    "retried" integer NOT NULL,
    "dead" integer NOT NULL,
    "total_ms" integer NOT NULL,
    "max_ms" integer NOT NULL,
    "h0" integer NOT NULL,
    "h1" integer NOT NULL,
    "h2" integer NOT NULL,
    "h3" integer NOT NULL,
    "h4" integer NOT NULL,
    "h5" integer NOT NULL,
    "h6" integer NOT NULL,
    "h7" integer NOT NULL,
    "h8" integer NOT NULL,
    "h9" integer NOT NULL,
    "h10" integer NOT NULL,
    "h11" integer NOT NULL,
    "h12" integer NOT NULL,
    "h13" integer NOT NULL,
    "h14" integer NOT NULL,
    "h15" integer NOT NULL,
    "h16" integer NOT NULL,
    "h17" integer NOT NULL,
    "h18" integer NOT NULL,
    PRIMARY KEY ("queue", "hour")
) WITHOUT ROWID;
-- The prune deletes by age alone, and the roll-up reads the last hour rolled.
CREATE INDEX "anole_jobs_stat_hour_hour" ON "anole_jobs_stat_hour" ("hour");
