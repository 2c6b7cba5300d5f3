"""The Redis store's entry points: `open_redis_store` (used by `stores.open_store`) and the
`check_redis_eviction` system check (W002).

The client always comes from the project's own settings: a ``CACHES`` alias whose backend is
django-redis. Anything else is refused with `ConfigurationError` (an
`ImproperlyConfigured`) that names the problem. Opening the store does not connect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlparse

from django.core import checks
from django.utils.module_loading import import_string

from anole_jobs.errors import ConfigurationError

if TYPE_CHECKING:
    from anole_jobs.conf import Settings
    from anole_jobs.stores.redis.store import RedisStore

__all__ = [
    "ClusterConnectionFactory",
    "check_cluster",
    "check_redis_eviction",
    "open_redis_store",
]


def _redis_client(alias: str) -> Any:
    """The redis-py client of cache `alias`, or `ConfigurationError` saying what is wrong."""
    from django.conf import settings as django_settings

    caches = getattr(django_settings, "CACHES", {})
    if alias not in caches:
        raise ConfigurationError(
            f"ANOLE_JOBS['STORE'] names cache {alias!r}, which is not in CACHES "
            f"(configured aliases: {', '.join(caches) or 'none'})"
        )
    try:
        from django_redis import get_redis_connection
        from django_redis.cache import RedisCache
    except ImportError:
        raise ConfigurationError(
            'the Redis jobs store needs django-redis: pip install "anole-jobs[redis]"'
        ) from None
    backend = caches[alias].get("BACKEND", "")
    try:
        backend_class = import_string(backend)
    except ImportError:
        backend_class = None
    if not (isinstance(backend_class, type) and issubclass(backend_class, RedisCache)):
        raise ConfigurationError(
            f"cache {alias!r} uses {backend!r}; the Redis jobs store needs django-redis "
            "(BACKEND 'django_redis.cache.RedisCache')"
        )
    try:
        client = get_redis_connection(alias, write=True)
    except NotImplementedError:
        raise ConfigurationError(
            f"cache {alias!r} uses a django-redis client with no single connection (sharded?); "
            "the Redis jobs store needs one Redis node, or a Redis Cluster through "
            "OPTIONS['CONNECTION_FACTORY'] = 'anole_jobs.stores.redis.ClusterConnectionFactory'"
        ) from None
    from anole_jobs.stores.redis.cluster import is_cluster_client

    if is_cluster_client(client):
        return client
    if not hasattr(client, "evalsha") or not hasattr(client, "connection_pool"):
        raise ConfigurationError(
            f"cache {alias!r} gives a {type(client).__name__}, not a redis-py client; the Redis "
            "jobs store needs django-redis's default client on a single Redis node"
        )
    return client


def open_redis_store(alias: str, settings: Settings) -> RedisStore:
    """The Redis store on cache `alias`, its keys under ``settings.key_prefix``: the cluster
    store when the cache's client is a `redis.cluster.RedisCluster`."""
    from anole_jobs.stores.redis.cluster import RedisClusterStore, is_cluster_client
    from anole_jobs.stores.redis.store import RedisStore

    client = _redis_client(alias)
    if is_cluster_client(client):
        return RedisClusterStore(
            client, key_prefix=settings.key_prefix, alias=alias, pool_size=settings.pool_size
        )
    return RedisStore(
        client, key_prefix=settings.key_prefix, alias=alias, pool_size=settings.pool_size
    )


def __getattr__(name: str) -> Any:
    # `ClusterConnectionFactory` is named in settings; imported on use (it needs redis-py).
    if name == "ClusterConnectionFactory":
        from anole_jobs.stores.redis.cluster import ClusterConnectionFactory

        return ClusterConnectionFactory
    raise AttributeError(name)


#: The connection factory that makes a cache's client a Redis Cluster client.
CLUSTER_FACTORY = "anole_jobs.stores.redis.ClusterConnectionFactory"


def uses_cluster(alias: str) -> bool:
    """Whether cache `alias` is set up for a Redis Cluster (read from CACHES; no connection)."""
    from django.conf import settings as django_settings

    options = getattr(django_settings, "CACHES", {}).get(alias, {}).get("OPTIONS") or {}
    return options.get("CONNECTION_FACTORY") == CLUSTER_FACTORY


def check_cluster(alias: str, key_prefix: str) -> list[checks.CheckMessage]:
    """E017: a Redis Cluster the store cannot use as configured (read from the settings)."""
    if not uses_cluster(alias):
        return []
    from django.conf import settings as django_settings

    from anole_jobs.stores.redis.cluster import check_prefix

    problems = []
    problem = check_prefix(key_prefix)
    if problem:
        problems.append((problem, "choose a KEY_PREFIX without braces, e.g. 'anole:'"))
    location_setting = django_settings.CACHES[alias].get("LOCATION") or ""
    locations = (
        location_setting.split(",") if isinstance(location_setting, str) else location_setting
    )
    for location in locations:
        parsed = urlparse(str(location).strip())
        database = parsed.path.strip("/") or parse_qs(parsed.query).get("db", [""])[0]
        if database not in ("", "0"):
            problems.append(
                (
                    f"cache {alias!r} names database {database} of a Redis Cluster, which has "
                    "database 0 only",
                    "end the LOCATION with /0 or no database",
                )
            )
    return [
        checks.Error(message, hint=f"{hint} (see docs/deployment.md)", id="anole_jobs.E017")
        for message, hint in problems
    ]


def check_redis_eviction(alias: str) -> list[checks.CheckMessage]:
    """W002 when Redis may evict keys: an evicted job key is a lost job.

    Connects to Redis, so it is registered as a ``database`` check (``check --database``).
    Reads ``maxmemory_policy`` from INFO (allowed where CONFIG is renamed away, as on many
    managed services), then falls back to CONFIG GET.
    """
    try:
        client = _redis_client(alias)
    except ConfigurationError:
        return []  # the configuration checks (E005, E012) report this one
    hint = (
        "set maxmemory-policy noeviction in redis.conf (or your provider's parameter group); "
        "keep the jobs in a Redis of their own if the cache needs eviction"
    )
    from anole_jobs.stores.redis.cluster import is_cluster_client

    try:
        if is_cluster_client(client):  # every master holds jobs: each must keep them
            return _cluster_eviction(client, alias, hint)
        policy = _policy(client)
    except Exception as exc:  # a check reports, it never raises
        return [
            checks.Warning(
                f"could not read Redis's maxmemory-policy for cache {alias!r}: {exc}",
                hint=hint,
                id="anole_jobs.W002",
            )
        ]
    if policy == "noeviction":
        return []
    return [
        checks.Warning(
            f"Redis behind cache {alias!r} has maxmemory-policy {policy!r}: when memory runs "
            "out it may evict job keys, and an evicted job is lost",
            hint=hint,
            id="anole_jobs.W002",
        )
    ]


def _policy(client: Any, **target: Any) -> str | None:
    policy = client.info("memory", **target).get("maxmemory_policy")
    if policy is None:
        policy = client.config_get("maxmemory-policy", **target).get("maxmemory-policy")
    return policy.decode() if isinstance(policy, bytes) else policy


def _cluster_eviction(client: Any, alias: str, hint: str) -> list[checks.CheckMessage]:
    evicting = []
    for node in client.get_primaries():
        policy = _policy(client, target_nodes=node)
        if policy != "noeviction":
            evicting.append(f"{node.host}:{node.port} ({policy!r})")
    if not evicting:
        return []
    return [
        checks.Warning(
            f"Redis Cluster behind cache {alias!r} has masters whose maxmemory-policy is not "
            f"noeviction: {', '.join(evicting)}; when memory runs out they may evict job keys, "
            "and an evicted job is lost",
            hint=hint,
            id="anole_jobs.W002",
        )
    ]
