"""What every surface that shows jobs to people shares: the JSON routes (`admin_api`), the
dashboard, ``manage.py jobs`` and the Django admin each only adapt this layer to their form.

- `ids`: any text → a job id (1 .. 2**63-1), or `NotFound`.
- `listing`: a listing's filters → one frozen `Listing` (bad input → `BadInput` naming the
  field), and `fetch_page`, which says "more" only when there is more.
- `actions`: retry, cancel, delete, pause, resume and cron trigger, each returning the record
  and whether it changed anything; queue names nobody uses are refused with "did you mean".
- `problems`: the one map from what went wrong (bad input, not found, a store that does not
  answer) to a `Problem`: a status, a short code and a sentence; each surface shows it its way.
- `permissions`: who may use the surfaces (``ANOLE_JOBS["ADMIN_PERMISSION"]``).
- `names`: the URL converter of queue and cron names (any character the store accepts).
- `payloads`: the JSON shapes of every answer, so the routes and ``manage.py jobs --json``
  print the same document.

It calls only the `jobs` facade, never the service or a store.
"""
