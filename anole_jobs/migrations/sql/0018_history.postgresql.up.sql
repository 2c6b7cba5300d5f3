-- Migration 0018_history (postgresql, up): the statistics' hourly history.
-- Frozen: never edit this file once released; a change to the schema is a new migration.
-- One row per queue and hour (hours since 1970-01-01T00:00Z): the minutes of the stat table
-- summed by the leader once the hour has ended, kept long after the minutes are pruned.
CREATE TABLE "anole_jobs_stat_hour" (
    "queue" text NOT NULL,
    "hour" bigint NOT NULL,
    "started" bigint NOT NULL,
    "completed" bigint NOT NULL,
    "retried" bigint NOT NULL,
    "dead" bigint NOT NULL,
    "total_ms" bigint NOT NULL,
    "max_ms" bigint NOT NULL,
    "h0" bigint NOT NULL,
    "h1" bigint NOT NULL,
    "h2" bigint NOT NULL,
    "h3" bigint NOT NULL,
    "h4" bigint NOT NULL,
    "h5" bigint NOT NULL,
    "h6" bigint NOT NULL,
    "h7" bigint NOT NULL,
    "h8" bigint NOT NULL,
    "h9" bigint NOT NULL,
    "h10" bigint NOT NULL,
    "h11" bigint NOT NULL,
    "h12" bigint NOT NULL,
    "h13" bigint NOT NULL,
    "h14" bigint NOT NULL,
    "h15" bigint NOT NULL,
    "h16" bigint NOT NULL,
    "h17" bigint NOT NULL,
    "h18" bigint NOT NULL,
    PRIMARY KEY ("queue", "hour")
);
-- The prune deletes by age alone, and the roll-up reads the last hour rolled.
CREATE INDEX "anole_jobs_stat_hour_hour" ON "anole_jobs_stat_hour" ("hour");
