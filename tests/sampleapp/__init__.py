"""A minimal app for the test suite; its jobs.py (if any) is autodiscovered."""
