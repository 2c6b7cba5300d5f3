-- Migration 0010_limited_claim (postgresql, down): undoes 0010_limited_claim.up.
-- Frozen: never edit this file; a change to the schema is a new migration.
DROP FUNCTION IF EXISTS "anole_jobs_claim_limited"(text, text[], integer, timestamptz, timestamptz, text, integer, integer, double precision);
