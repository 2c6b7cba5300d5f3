"""Helpers every test tier shares, in one place: a logged-in staff client (`clients`), a free
port and a TCP proxy that can cut a server off (`network`), and a `redis-server` of the test's
own that it can kill and restart (`redis_server`).

Nothing here is a fixture: each tier's conftest wraps what it needs.
"""
