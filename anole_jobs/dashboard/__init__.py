"""The dashboard (R41): HTML pages served under ``dashboard/`` of ``include("anole_jobs.urls")``."""
