-- Migration 0017_operator (sqlite, up): worker controls and the operators' audit log.
-- Frozen: never edit this file once released; a change to the schema is a new migration.
-- An operator's request to one worker (quiet or stop) as JSON on its row; NULL when none.
ALTER TABLE "anole_jobs_worker" ADD COLUMN "control" text NULL;
-- One row per operator action (who, what, which target, when, from which surface).
CREATE TABLE "anole_jobs_audit" (
    "id" integer NOT NULL PRIMARY KEY AUTOINCREMENT,
    "at" datetime NOT NULL,
    "actor" text NOT NULL,
    "action" text NOT NULL,
    "target" text NOT NULL,
    "surface" text NOT NULL,
    "detail" text NOT NULL
);
