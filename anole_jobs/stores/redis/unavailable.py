"""`StoreUnavailable` for the Redis store, in a user's words: what happened to the connection
("connection refused to 127.0.0.1:6390") and whether the write may have happened.

A command that never left this process (the connection was refused, or timed out while
connecting) surely did not run: "the job was not stored". Once it was sent, a lost reply says
nothing about whether Redis ran it: "the job may have been stored". When unsure, say "may".
"""

from __future__ import annotations

import re
from typing import Any

from redis.exceptions import ClusterDownError, ClusterError, RedisClusterException, TryAgainError
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


#: The node redis-py names in a connection error: "Error 111 connecting to HOST:PORT. ...".
_NODE = re.compile(r"connecting to (\S+?:\d+)\.")
#: Seconds a look at the cluster's state may take, on the error's path.
STATE_TIMEOUT = 0.5


def _ranges(slots: list[int]) -> str:
    """``0-5460, 10923`` for a sorted list of slots."""
    spans: list[str] = []
    start = previous = None
    for slot in [*slots, None]:
        if slot is not None and previous is not None and slot == previous + 1:
            previous = slot
            continue
        if start is not None:
            spans.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = slot
    return ", ".join(spans)


def masterless_slots(nodes_text: str) -> str:
    """From a ``CLUSTER NODES`` reply: which slots have no serving master, and whose they
    were ("slots 0-5460 have no master (127.0.0.1:7000 failed)"), or "" when none."""
    lost: list[int] = []
    failed: list[str] = []
    for line in nodes_text.splitlines():
        fields = line.split()
        if len(fields) < 8 or "master" not in fields[2].split(","):
            continue
        flags = set(fields[2].split(","))
        if not flags & {"fail", "fail?", "noaddr"} and fields[7] != "disconnected":
            continue
        failed.append(fields[1].split("@")[0])
        for spec in fields[8:]:
            if spec.startswith("["):
                continue  # a slot being migrated
            low, _, high = spec.partition("-")
            lost.extend(range(int(low), int(high or low) + 1))
    if not lost:
        return ""
    return f"slots {_ranges(sorted(lost))} have no master ({', '.join(failed)} failed)"


def cluster_state(client: Any) -> str:
    """What the cluster says of its masters, asked of the first node that answers within
    `STATE_TIMEOUT` (a moment, on an error's path): the slots without a master, or ""."""
    import redis

    if getattr(client, "connected", True) is False or not hasattr(client, "get_primaries"):
        return ""
    try:
        nodes = list(client.get_nodes())
    except Exception:  # noqa: BLE001 - a description only: the error itself is raised anyway
        return ""
    for node in nodes:
        try:
            direct = redis.Redis(
                host=node.host,
                port=node.port,
                socket_timeout=STATE_TIMEOUT,
                socket_connect_timeout=STATE_TIMEOUT,
            )
            try:
                reply = direct.execute_command("CLUSTER", "NODES")
            finally:
                direct.close()
        except Exception:  # noqa: BLE001 - that node does not answer either: ask the next
            continue
        text = reply.decode() if isinstance(reply, bytes) else str(reply)
        return masterless_slots(text)
    return ""


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
    if where.startswith("the Redis Cluster at "):
        # The node that failed, not every master (the others may be healthy).
        named = next((m.group(1) for e in chain if (m := _NODE.search(str(e)))), None)
        if named is not None and where != f"the Redis Cluster at {named}":
            where = f"{named} (a node of the Redis Cluster)"
    if any(isinstance(error, ClusterDownError) for error in chain) or "CLUSTERDOWN" in text:
        return f"CLUSTERDOWN: the Redis Cluster does not serve every slot ({text})", False
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


def _with_state(happened: str, client: Any) -> str:
    """On a cluster, add which slots have no master (a failover in progress, a node down)."""
    if getattr(client, "connected", True) is False:  # no node reached yet: nothing to ask
        return happened
    state = cluster_state(client) if hasattr(client, "get_primaries") else ""
    return f"{happened}; {state}" if state else happened


def write_failed(script: str, exc: BaseException, client: Any) -> StoreUnavailable:
    """The error for a script (a write) that failed on the connection."""
    happened, never_sent = what_happened(exc, address(client))
    happened = _with_state(happened, client)
    action, not_done, maybe_done = _WRITES.get(
        script, (script, "nothing was changed", "the change may have been made")
    )
    return StoreUnavailable(
        f"{action} failed: {happened}; {not_done if never_sent else maybe_done}"
    )


def read_failed(command: str, exc: BaseException, client: Any) -> StoreUnavailable:
    """The error for a read that failed on the connection (nothing was changed)."""
    happened, _ = what_happened(exc, address(client))
    happened = _with_state(happened, client)
    return StoreUnavailable(f"reading from Redis ({command.upper()}) failed: {happened}")
