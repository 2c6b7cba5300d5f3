"""The unique constraint on ``unique_lock`` again, on PostgreSQL databases where the first form
of 0011 replaced it with a partial unique index: code of the release before 0011 inserts with
``ON CONFLICT (unique_lock)``, which fails against the partial index, so a rolling deploy broke
every enqueue of the old code the moment 0011 committed. This release's inserts
(``ON CONFLICT (unique_lock) WHERE unique_lock IS NOT NULL``) work with either shape.

Where the constraint is already there (0011 as it is now, a fresh install, SQLite) it does
nothing. Where it is not, it builds the constraint's index first (writes to the job table wait
meanwhile, reads go on), then swaps it in (reads wait too, until it commits); see
docs/upgrading.md for the times. Its SQL is frozen in
``sql/0012_unique_lock.<vendor>.<up|down>.sql``; ``MIGRATE=False`` makes it change nothing.
"""

from django.db import migrations

from anole_jobs.stores.database.frozen import RunFrozenSQL


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0011_enqueue_indexes")]

    operations = [RunFrozenSQL("0012_unique_lock")]
