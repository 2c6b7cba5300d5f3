-- Migration 0018_history (postgresql, down): back to 0017.
DROP TABLE "anole_jobs_stat_hour";
