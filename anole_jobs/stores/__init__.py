"""Stores: one contract (`base.Store`) and one module per backend; `open_store` picks one."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from anole_jobs.conf import Settings
    from anole_jobs.stores.base import Store


def open_store(settings: Settings) -> Store:
    """Build the store `settings.store` names (imports only the backend in use)."""
    config = settings.store
    if config.kind == "memory":
        from anole_jobs.stores.memory import MemoryStore

        return MemoryStore()
    if config.kind == "database":
        from anole_jobs.stores.database import open_database_store

        assert config.alias is not None
        return open_database_store(config.alias, settings)
    from anole_jobs.stores.redis import open_redis_store

    assert config.alias is not None
    return open_redis_store(config.alias, settings)
