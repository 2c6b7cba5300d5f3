"""The operator's JSON routes (R31, SPEC §13 "Admin HTTP", R36): ``include("anole_jobs.urls")``.

`routes` is the one description of the routes: `urls` builds the URLconf from it and `openapi`
the OpenAPI 3.1 document. `views` holds the handlers (they only call the `jobs` facade),
`permissions` the ``ADMIN_PERMISSION`` check, and `payloads` the JSON shapes, which the
``manage.py jobs --json`` command prints too.
"""
