"""The dashboard (docs/dashboard.md): HTML pages served under ``dashboard/`` of
``include("anole_jobs.urls")``."""
