"""The operator's JSON routes (docs/admin.md): ``include("anole_jobs.urls")``.

`routes` is the one description of the routes: `urls` builds the URLconf from it and `openapi`
the OpenAPI 3.1 document. `views` holds the handlers (thin adapters of
`anole_jobs.operations`, which parses, pages, acts, checks ``ADMIN_PERMISSION`` and says
what went wrong, and whose `payloads` are the JSON shapes, which ``manage.py jobs --json``
prints too).
"""
