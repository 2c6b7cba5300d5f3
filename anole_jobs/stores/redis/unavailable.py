"""`StoreUnavailable` for the Redis store, in a user's words: what happened to the connection
("connection refused to 127.0.0.1:6390") and whether the write may have happened.

A command that never left this process (the connection was refused, or timed out while
connecting) surely did not run: "the job was not stored". Once it was sent, a lost reply says
nothing about whether Redis ran it: "the job may have been stored". When unsure, say "may".
"""

from __future__ import annotations

from typing import Any

from redis.exceptions import ClusterError, RedisClusterException, TryAgainError
from redis.exceptions import TimeoutError as RedisTimeoutError

from anole_jobs.errors import StoreUnavailable

#: What a Redis Cluster raises while it cannot serve a slot (a failover, a master down, no
#: node reachable): reported as `StoreUnavailable`, like a connection error.
CLUSTER_ERRORS = (ClusterError, RedisClusterException, TryAgainError)

#: script -> (what the user asked for, when it surely did not happen, when it may have)
_WRITES: dict[str, tuple[str, str, str]] = {
    "insert": ("enqueue", "the job was not stored", "the job may have been stored"),
    # A cluster's enqueue first reserves ids (writing no job), then inserts.
    "reserve": ("enqueue", "the job was not stored", "the job was not stored"),
    "insert_single": ("enqueue", "the job was not stored", "the job may have been stored"),
    "cron_advance": ("cron's enqueue", "no job was stored", "the job may have been stored"),
    "cron_trigger": ("cron's run now", "no job was stored", "the job may have been stored"),
    "claim": (
        "claim",
        "no job was claimed",
        "jobs may have been claimed (their leases lapse and rescue puts them back)",
    ),
    "finish": ("saving run outcomes", "no outcome was saved", "the outcomes may have been saved"),
    "heartbeat": ("heartbeat", "no lease was extended", "leases may have been extended"),
    "retry": ("retry", "the job was not changed", "the job may have been retried"),
    "cancel": ("cancel", "the job was not changed", "the job may have been cancelled"),
    "delete": ("delete", "the job was not changed", "the job may have been deleted"),
}


def address(client: Any) -> str:
    """Where `client` connects, as a person writes it: ``host:port`` or the socket path."""
    if getattr(client, "connected", True) is False:  # a Redis Cluster not reached yet
        return f"the Redis Cluster at {client.where()}"
    if hasattr(client, "get_primaries"):  # a Redis Cluster: its masters
        nodes = [f"{node.host}:{node.port}" for node in client.get_primaries()]
        return f"the Redis Cluster at {', '.join(nodes) or 'no known node'}"
    kwargs = getattr(getattr(client, "connection_pool", None), "connection_kwargs", {})
    if kwargs.get("path"):
        return str(kwargs["path"])
    return f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def what_happened(exc: BaseException, where: str) -> tuple[str, bool]:
    """The failure in a user's words, and whether the command surely was never sent."""
    chain = _chain(exc)
    text = str(exc)
    if any(isinstance(error, ConnectionRefusedError) for error in chain):
        return f"connection refused to {where}", True
    if text.startswith("Timeout connecting"):
        return f"timed out connecting to {where}", True
    if " connecting to " in text:  # redis-py: "Error <n> connecting to <host>:<port>. <why>"
        reason = text.rsplit(". ", 1)[-1].rstrip(".") if ". " in text else text
        return f"could not connect to {where} ({reason})", True
    if isinstance(exc, CLUSTER_ERRORS):
        return f"{where} could not serve the command ({text})", False
    if isinstance(exc, RedisTimeoutError):
        return f"no answer from {where} within the socket timeout", False
    return f"the connection to {where} broke after the command was sent ({text})", False


def write_failed(script: str, exc: BaseException, client: Any) -> StoreUnavailable:
    """The error for a script (a write) that failed on the connection."""
    happened, never_sent = what_happened(exc, address(client))
    action, not_done, maybe_done = _WRITES.get(
        script, (script, "nothing was changed", "the change may have been made")
    )
    return StoreUnavailable(
        f"{action} failed: {happened}; {not_done if never_sent else maybe_done}"
    )


def read_failed(command: str, exc: BaseException, client: Any) -> StoreUnavailable:
    """The error for a read that failed on the connection (nothing was changed)."""
    happened, _ = what_happened(exc, address(client))
    return StoreUnavailable(f"reading from Redis ({command.upper()}) failed: {happened}")
