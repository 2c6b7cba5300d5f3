"""Sign-ups: a small app that uses anole_jobs the way a Django project would."""
