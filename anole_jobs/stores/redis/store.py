"""The Redis store: the whole store contract on one Redis node, durable as far as Redis
persists (see docs/stores.md).

This module owns the Python half: argument encoding, script calls and record decoding. Every
state change is one Lua script in `scripts/` (the server runs it atomically, so no MULTI), and
every fenced write (still running, same attempt, same claim token) is checked inside its
script. Key names live in `keys.py` only.

Scripts are sent by SHA (EVALSHA) and loaded with SCRIPT LOAD the first time Redis answers
NOSCRIPT — at first use, and again after a `SCRIPT FLUSH` or a restart. Nothing here retries a
write after a connection error: the command may have run, and a blind retry could insert a job
twice. Connections the pool finds dead are replaced by redis-py before a command is sent; an
error mid-command surfaces as `StoreUnavailable`, and at-least-once delivery (leases, rescue)
covers whatever was half done.

Every script is called through `RedisStore._run`: on a Redis Cluster, `cluster.RedisClusterStore`
sends each one to its slot there.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import hashlib
import json
import logging
import re
import threading
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError
from redis.exceptions import TimeoutError as RedisTimeoutError

from anole_jobs import timeline
from anole_jobs.core import (
    AFTER_RUN_STATES,
    FINAL_STATES,
    LIST_LIMIT_MAX,
    LIVE_STATES,
    CronState,
    JobRecord,
    ListFilter,
    WorkflowRow,
    split_claim_key,
)
from anole_jobs.jsontext import compact, compact_ascii
from anole_jobs.limits import Limits, RateLimit
from anole_jobs.stores.base import (
    REPLACED,
    REPLACED_MESSAGE,
    ClaimedJob,
    FairnessState,
    Finish,
    Inserted,
    LimitUsage,
    NewJob,
    NewStep,
    NewWorkflow,
    Rescued,
    RunRef,
    Store,
    ended_ids,
    woken_queues,
)
from anole_jobs.stores.redis import keys
from anole_jobs.stores.redis.durable import RedisDurable
from anole_jobs.stores.redis.keys import ID_WIDTH, RECORD_FIELDS, Keys, parse_time_key, time_key
from anole_jobs.stores.redis.limits import RedisLimits, _settings_args
from anole_jobs.stores.redis.listener import Listener, encode
from anole_jobs.stores.redis.records import (
    as_text,
    fields_of,
    record_of,
    stored_json,
    with_timeline,
)
from anole_jobs.stores.redis.unavailable import read_failed, write_failed
from anole_jobs.stores.redis.workers import RedisWorkers
from anole_jobs.stores.search import search_matches, searches
from anole_jobs.stores.stats import (
    STAT_COLUMNS,
    Resolution,
    StatsByQueue,
    check_range,
    floor_time,
    hour_number,
    hourly_points,
    minute_number,
    minutes_to_prune,
    roll_up_rows,
)
from anole_jobs.stores.wakeups import Subscription

logger = logging.getLogger("anole_jobs.stores.redis")

SCRIPTS_DIR = Path(__file__).with_name("scripts")
#: States a job may be inserted in (what `NewJob.state` may say).
INSERT_STATES = ("available", "scheduled", "retrying")
#: Index entries one `list` script call may walk before handing back a cursor.
LIST_SCAN_BUDGET = 5_000
#: Jobs one list call returns to a search, which tests its terms in Python.
SEARCH_CHUNK = 500
#: Most jobs one claim/stage/rescue/prune script call moves. A script blocks the whole Redis
#: server while it runs, so larger limits are served by several calls (each one atomic).
SCRIPT_CHUNK = 1_000


#: The scripts that also get `_claim.lua` (the walk in claim order and the claim of one job)
#: and `_limits.lua` (queue limits) before their own text.
CLAIM_SCRIPTS = ("claim", "claim_limited")
LIMIT_SCRIPTS = ("claim_limited", "limits_held", "limit_usage")


@functools.cache
def _sources() -> dict[str, tuple[str, str]]:
    """``{name: (source, sha1)}``: each script is the key prelude + `_lib.lua` (+ `_claim.lua`,
    + `_limits.lua` where it needs them) + its file, the prelude cut to the definitions the
    script uses (`_used_definitions`)."""
    lib = (SCRIPTS_DIR / "_lib.lua").read_text()
    claim_lib = (SCRIPTS_DIR / "_claim.lua").read_text() + "\n"
    limits_lib = (SCRIPTS_DIR / "_limits.lua").read_text() + "\n"
    sources = {}
    for path in sorted(SCRIPTS_DIR.glob("*.lua")):
        if not path.name.startswith("_"):
            extra = claim_lib if path.stem in CLAIM_SCRIPTS else ""
            extra += limits_lib if path.stem in LIMIT_SCRIPTS else ""
            body = path.read_text()
            source = _used_definitions(f"{keys.LUA}\n{lib}\n{extra}", body) + body
            sha = hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()
            sources[path.stem] = (source, sha)
    return sources


#: A top-level definition of the prelude: ``local function f``, ``local a, b = ...`` or
#: ``local a`` (a forward declaration), or ``f = function`` (its later definition).
_DEFINITION = re.compile(
    r"local\s+function\s+(?P<function>\w+)"
    r"|local\s+(?P<names>\w+(?:\s*,\s*\w+)*)\s*(?:=|--|$)"
    r"|(?P<assigned>\w+)\s*=\s*function\b"
)
#: A Lua string literal (quoted, one line), a comment (to the end of its line), a name, or
#: one of the tokens that tell a name from a field: ``..``, ``.``, ``:``, ``{``, ``}``, ``,``.
_LUA_TOKEN = re.compile(
    r"""'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|--[^\n]*|[A-Za-z_]\w*|\.\.|[.:{},]"""
)
_FIELD_KEY = re.compile(r"\s*=(?!=)")


def _names(code: str) -> set[str]:
    """The names Lua `code` may refer to: its names outside comments, except fields (after
    ``.`` or ``:``, or a key ``name =`` in a table constructor), and the words of its string
    literals (more than needed, never less)."""
    found: set[str] = set()
    previous, depth = "", 0
    for match in _LUA_TOKEN.finditer(code):
        token = match[0]
        if token.startswith(("'", '"')):
            found.update(re.findall(r"[A-Za-z_]\w*", token))
        elif token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
        elif token[0].isalpha() or token[0] == "_":
            field = previous in (".", ":") or (
                depth > 0 and previous in ("{", ",") and _FIELD_KEY.match(code, match.end())
            )
            if not field:
                found.add(token)
        if not token.startswith("--"):
            previous = token
    return found


def _used_definitions(prelude: str, body: str) -> str:
    """`prelude` cut to the top-level definitions `body` uses, directly or through another
    kept one, in their order. Redis runs a script's whole text on every call, so each of the
    prelude's ~100 closures and tables was built (and collected) on every call of every
    script: a third of a single insert's server time. A definition starts at a line that begins
    with one (its comment lines above it go with it) and runs to the next; any other statement
    at the top level is always kept. A name is used when it appears in the code outside a
    comment (a string naming it keeps it too: more than needed, never less)."""
    units: list[tuple[frozenset[str] | None, list[str]]] = []  # None: always kept
    comments: list[str] = []
    for line in prelude.splitlines(keepends=True):
        if line.startswith("--") or not line.strip():
            comments.append(line)
            continue
        if units and (line[0] in " \t" or line.startswith(("end", "}", ")"))):
            units[-1][1].extend(comments)  # the body of the current definition
            units[-1][1].append(line)
            comments = []
            continue
        found = _DEFINITION.match(line)
        if found is None:
            names = None
        else:
            listed = found["function"] or found["assigned"] or found["names"]
            names = frozenset(name.strip() for name in listed.split(","))
        units.append((names, [*comments, line]))
        comments = []
    used = _names(body)
    kept = [names is None for names, _ in units]
    for names, lines in units:
        if names is None:
            used.update(_names("".join(lines)))
    changed = True
    while changed:  # until no kept definition names another one
        changed = False
        for index, (names, lines) in enumerate(units):
            if not kept[index] and names is not None and not names.isdisjoint(used):
                kept[index] = changed = True
                used.update(_names("".join(lines)))
    return "".join("".join(lines) for keep, (_, lines) in zip(kept, units, strict=True) if keep)


class Scripts:
    """The Lua scripts of the store, called by SHA on `client`."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.sources = {name: source for name, (source, _) in _sources().items()}
        self.shas = {name: sha for name, (_, sha) in _sources().items()}

    def call(self, name: str, prefix: str, *args: object, route: str | None = None) -> Any:
        """EVALSHA `name` with ARGV = (prefix, *args); SCRIPT LOAD and retry on NOSCRIPT (the
        script surely did not run, so the retry cannot repeat a write). On a cluster `route`
        is the one key declared (KEYS[1]), which sends the script to its slot's node."""
        sha = self.shas[name]
        keys = () if route is None else (route,)
        try:
            try:
                return self._client.evalsha(sha, len(keys), *keys, prefix, *args)
            except NoScriptError:
                self._client.script_load(self.sources[name])
                return self._client.evalsha(sha, len(keys), *keys, prefix, *args)
        except (RedisConnectionError, RedisTimeoutError) as exc:
            # Says whether the write may have happened; leases and rescue cover a half-done one.
            raise write_failed(name, exc, self._client) from exc


def _narrowing(filter: ListFilter) -> tuple[str, str, str]:
    """What list.lua tests of a search before the exact test here: the kind prefix, ASCII
    error text (Lua lower-cases ASCII only) and top-level number and string argument values
    (Lua cannot tell an empty object from an empty array); each "" when not given."""
    error = filter.error.lower() if filter.error is not None and filter.error.isascii() else ""
    plain = {
        key: value
        for key, value in (filter.args or {}).items()
        if isinstance(value, (int, float, str)) and not isinstance(value, bool)
    }
    return filter.kind_prefix or "", error, compact(plain) if plain else ""


#: ASCII only: redis-py encodes str as strict UTF-8, which a lone surrogate would break.
_json = compact_ascii


def _flow_args(job: NewJob) -> tuple[str, ...]:
    """A job's fairness value, weight and sequence as the cron, debounce and replace scripts
    read them (none for a job without)."""
    if not job.flow:
        return ()
    return (job.fair_key or "", repr(float(job.fair_weight)), job.sequence_key or "")


def _json_list(values: list[str]) -> str:
    # ASCII only, as `_json`; one argument for a whole batch.
    return json.dumps(values, separators=(",", ":"))


class CallSlots:
    """At most `size` threads inside a block at once (re-entrant per thread): the runtime's
    threads' share of the client's connection pool, which keeps a connection for every call
    that ever ran at the same moment as others."""

    def __init__(self, size: int) -> None:
        self._free = threading.BoundedSemaphore(size)
        self._local = threading.local()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        if getattr(self._local, "held", False):
            yield
            return
        self._free.acquire()
        self._local.held = True
        try:
            yield
        finally:
            self._local.held = False
            self._free.release()


class RedisStore(RedisDurable, RedisLimits, RedisWorkers, Store):
    """See the module docstring; `client` is a redis-py client (from django-redis)."""

    name = "redis"
    supports_cross_process_wakeups = True  # PUBLISH

    def __init__(
        self, client: Any, *, key_prefix: str, alias: str | None = None, pool_size: int = 2
    ) -> None:
        # The runtime's threads (dispatchers, completer, heartbeat, maintenance) make at most
        # `pool_size` calls at once, so they keep at most that many of the pool's
        # connections (POOL_SIZE; 0: no bound). Not on a cluster: there a call that waits
        # for one master's failover must not hold up the queues of the others.
        self.shares_sessions = pool_size > 0 and not getattr(self, "cluster", False)
        self._call_slots = CallSlots(max(pool_size, 1))
        self.client = client
        self.alias = alias
        self.keys = Keys(key_prefix)
        self.scripts = Scripts(client)
        pool = getattr(client, "connection_pool", None)  # a cluster has none: database 0
        self.db = int(pool.connection_kwargs.get("db", 0) or 0) if pool is not None else 0
        self.channel = self.keys.channel(self.db)
        self.done_channel = self.keys.done_channel(self.db)
        self._sender = uuid.uuid4().hex
        self._listener: Listener | None = None
        self._done_listener: Listener | None = None
        self._listener_lock = threading.Lock()
        self._closed = False

    def ping(self) -> None:
        # A real round trip: the cluster store answers `get(0)` without one.
        self._read("ping")

    def shared_session(self) -> contextlib.AbstractContextManager[None]:
        if not self.shares_sessions:
            return contextlib.nullcontext()
        return self._call_slots.hold()

    def _run(self, script: str, *args: object) -> Any:
        return self.scripts.call(script, self.keys.prefix, *args)

    @staticmethod
    def _chunked(limit: int, one_call: Callable[[int], int]) -> int:
        """Call `one_call(chunk)` (which returns how many it moved) until `limit` is reached or
        a call moves fewer than asked; return the total."""
        total = 0
        while total < limit:
            chunk = min(limit - total, SCRIPT_CHUNK)
            moved = one_call(chunk)
            total += moved
            if moved < chunk:
                break
        return total

    def _read(self, method: str, *args: object) -> Any:
        """A plain command (a read, or a one-key write that needs no script); connection
        errors become `StoreUnavailable`."""
        try:
            return getattr(self.client, method)(*args)
        except (RedisConnectionError, RedisTimeoutError) as exc:
            raise read_failed(method, exc, self.client) from exc

    @staticmethod
    def _new_job_args(
        job: NewJob, time_key: Callable[[datetime], str] = time_key
    ) -> tuple[str, ...]:
        """The NEW_JOB_FIELDS values `insert_one` in _lib.lua reads, in its order."""
        if job.state not in INSERT_STATES:
            raise ValueError(f"a new job's state must be one of {INSERT_STATES}, got {job.state!r}")
        if not job.queue or not job.kind:
            raise ValueError("a job needs a non-empty queue and kind")
        created = time_key(job.created_at)
        # A job due now is scheduled at its creation (the same instant: the same key).
        scheduled = created if job.scheduled_at == job.created_at else time_key(job.scheduled_at)
        return (
            job.kind,
            job.queue,
            job.state,
            _json(job.args),
            "{}" if not job.meta else _json(job.meta),
            str(int(job.priority)),
            str(int(job.max_attempts)),
            created,
            scheduled,
            "0" if job.unique_key is None else "1",
            job.unique_key or "",
            job.unique_scope,
            str(int(job.version)),
        )

    @staticmethod
    def _flows(jobs: Sequence[NewJob]) -> str:
        """The flow of each job as insert.lua reads it: [fairness value, weight, sequence]."""
        return _json(
            [
                [job.fair_key or "", repr(float(job.fair_weight)), job.sequence_key or ""]
                for job in jobs
            ]
        )

    # -- enqueueing ------------------------------------------------------------------------
    def insert(self, jobs: Sequence[NewJob]) -> list[Inserted]:
        if not jobs:
            return []
        flows = any(job.flow for job in jobs)
        if len(jobs) == 1 and not flows:  # `jobs.enqueue`: a leaner script, one int reply
            job = jobs[0]
            packed = compact((self.channel, self._sender, *self._new_job_args(job)))
            reply = int(self._run("insert_single", packed))
            if reply < 0:  # the holder of its unique key
                return [Inserted(-reply, False)]
            # The script published for other processes; this one's waiters, if any, here.
            if job.state == "available" and self.wakeups.has_subscribers():
                self.wakeups.wake({job.queue: job.priority})
            return [Inserted(reply, True)]
        times: dict[datetime, str] = {}  # a batch's jobs mostly share their two times

        def batch_time_key(moment: datetime) -> str:
            key = times.get(moment)
            if key is None:
                key = times[moment] = time_key(moment)
            return key

        args: list[str] = []
        for job in jobs:
            args.extend(self._new_job_args(job, batch_time_key))
        batch = compact(args)
        # Turns and sequences (docs/flow-control.md), given by the script.
        extra = (self._flows(jobs),) if flows else ()
        reply = self._run("insert", self.channel, self._sender, len(jobs), batch, *extra)
        flat = as_text(reply).split(",")
        results = [Inserted(int(flat[i]), flat[i + 1] == "1") for i in range(0, len(flat), 2)]
        # The script published the wake-up for other processes; this one's waiters are woken
        # here (the listener skips this store's own messages).
        queues = woken_queues(jobs, results)
        if queues:
            self.wakeups.wake(queues)
        return results

    def insert_debounced(self, job: NewJob) -> Inserted:
        key = job.debounce_key
        assert key is not None
        cap = job.debounce_max_wait
        wait = max(job.scheduled_at - job.created_at, timedelta(0))
        ttl = int(wait.total_seconds() * 1000) + 1000
        packed = compact(
            (
                self.channel,
                self._sender,
                *self._new_job_args(job),  # no unique key: the service never gives one
                key,
                "" if cap is None else str(cap // timedelta(microseconds=1)),
                str(ttl),
                *_flow_args(job),  # its turn and sequence, for a job with a flow
            )
        )
        reply = int(self._run("insert_debounced", packed))
        # A debounced job goes in scheduled: there is no worker to wake.
        return Inserted(-reply, False) if reply < 0 else Inserted(reply, True)

    def insert_replacing(self, job: NewJob) -> Inserted:
        entry = compact(
            {
                "at": job.created_at.isoformat(),
                "type": REPLACED,
                "message": REPLACED_MESSAGE,
                "traceback": "",
            }
        )
        packed = compact(
            (self.channel, self._sender, entry, *self._new_job_args(job), *_flow_args(job))
        )
        new_id, inserted, ended = (int(x) for x in self._run("insert_replacing", packed))
        if ended:
            self._ended([ended])
        result = Inserted(new_id, inserted == 1)
        if woken_queues([job], [result]) and self.wakeups.has_subscribers():
            self.wakeups.wake({job.queue: job.priority})
        return result

    def oldest_available(self, queues: Collection[str]) -> dict[str, datetime]:
        names = sorted(queues)
        if not names:
            return {}
        reply = self._run("oldest_available", *names)
        return {
            queue: parse_time_key(as_text(at))
            for queue, at in zip(names, reply, strict=True)
            if as_text(at)
        }

    def limit_usage(
        self, queue: str, limits: Limits, *, partition: str, now: datetime
    ) -> LimitUsage:
        reply = [
            as_text(x)
            for x in self._run("limit_usage", queue, *_settings_args(limits, now), partition)
        ]
        concurrency = int(reply[0]) if reply[0] else None
        rate = None
        if reply[1]:
            rate = RateLimit(int(reply[1]), timedelta(seconds=float(reply[2])))
        effective = Limits(
            global_concurrency=concurrency, rate_limit=rate, partition=limits.partition
        )
        return LimitUsage(
            limits=effective,
            running=int(reply[3]),
            claims=tuple(sorted(float(t) for t in reply[4:])),
        )

    # -- running ---------------------------------------------------------------------------
    def claim(
        self,
        queue: str,
        *,
        kinds: Collection[str] | None,
        limit: int,
        now: datetime,
        lease_until: datetime,
        worker: str,
    ) -> list[ClaimedJob]:
        if kinds is not None and not kinds:
            return []
        selector = ["*"] if kinds is None else ["+", *sorted(kinds)]
        claimed: list[ClaimedJob] = []
        while len(claimed) < limit:
            chunk = min(limit - len(claimed), SCRIPT_CHUNK)
            rows = self._run(
                "claim",
                queue,
                chunk,
                time_key(now),
                time_key(lease_until),
                lease_until.isoformat(),
                worker,
                *selector,
            )
            for encoded in rows:
                fields = fields_of(encoded)
                record = record_of(fields)
                run = RunRef(record.id, record.attempt, int(fields["token"]))
                claimed.append(ClaimedJob(record=record, run=run, lease_until=lease_until))
            if len(rows) < chunk:
                break
        return claimed

    def heartbeat(self, runs: Collection[RunRef], *, lease_until: datetime) -> set[RunRef]:
        runs = list(runs)
        if not runs:
            return set()
        args: list[object] = [time_key(lease_until), lease_until.isoformat()]
        for run in runs:
            args.extend((run.id, run.attempt, run.token))
        held = self._run("heartbeat", *args)
        return {run for run, ok in zip(runs, held, strict=True) if ok == 1}

    def finish(self, results: Sequence[Finish]) -> list[bool]:
        if not results:
            return []
        flat: list[str] = []
        for result in results:
            if result.state not in AFTER_RUN_STATES:
                raise ValueError(f"finish cannot write state {result.state!r}")
            flat.extend(
                (
                    str(result.run.id),
                    str(result.run.attempt),
                    str(result.run.token),
                    result.state,
                    time_key(result.at),
                    "" if result.scheduled_at is None else time_key(result.scheduled_at),
                    "" if result.error is None else _json(result.error.as_json()),
                    "1" if result.give_back_attempt else "0",
                    result.result or "",
                    "" if result.started_at is None else time_key(result.started_at),
                    # A completed attempt is not appended: the row says it (timeline.py).
                    result.outcome if timeline.kept(result.outcome) else "",
                    result.progress or "",
                    result.logs or "",
                    str(result.logs_kept),
                )
            )
        reply = self._run(
            "finish", len(results), _json_list(flat), self.done_channel, self._sender, self.channel
        )
        written = [ok == 1 for ok in reply]
        if self.waits_for_finished():
            self.wake_finished(ended_ids(results, written))
        return written

    def rename_kind(self, run: RunRef, kind: str) -> bool:
        return self._run("rename_kind", run.id, run.attempt, run.token, kind) == 1

    def rewrite_payload(
        self, job_id: int, *, args: Mapping[str, Any] | None, result: str | None
    ) -> bool:
        return (
            self._run(
                "rewrite_payload",
                job_id,
                "" if args is None else _json(dict(args)),
                "" if result is None else result,
            )
            == 1
        )

    def live_versions(self) -> dict[tuple[str, int], int]:
        found: dict[tuple[str, int], int] = {}
        for state in LIVE_STATES:
            key = self.keys.by_state(state)
            start = 0
            while True:
                members = self._read("zrange", key, start, start + 999)
                if not members:
                    break
                start += len(members)
                pipe = self.client.pipeline(transaction=False)
                for member in members:
                    pipe.hmget(self.keys.job(int(as_text(member))), "kind", "ver")
                for kind, ver in pipe.execute():
                    if kind is not None:
                        k = (as_text(kind), int(ver or 1))
                        found[k] = found.get(k, 0) + 1
        return found

    def update_meta(self, run: RunRef, meta: Mapping[str, Any]) -> bool:
        return self._run("update_meta", run.id, run.attempt, run.token, _json(dict(meta))) == 1

    def record_progress(self, run: RunRef, progress: str) -> bool:
        return self._run("record_progress", run.id, run.attempt, run.token, progress) == 1

    def record_logs(self, run: RunRef, logs: str, keep: int) -> bool:
        return self._run("record_logs", run.id, run.attempt, run.token, logs, keep) == 1

    # -- maintenance -----------------------------------------------------------------------
    def stage(self, *, now: datetime, limit: int = 10_000) -> int:
        return self._chunked(limit, lambda chunk: int(self._run("stage", time_key(now), chunk)))

    def rescue(self, *, now: datetime, limit: int = 10_000) -> list[Rescued]:
        rescued: list[Rescued] = []

        def one_call(chunk: int) -> int:
            flat = self._run(
                "rescue", time_key(now), now.isoformat(), chunk, self.channel, self.done_channel
            )
            rescued.extend(
                Rescued(
                    id=int(flat[i]),
                    kind=as_text(flat[i + 1]),
                    queue=as_text(flat[i + 2]),
                    state=as_text(flat[i + 3]),  # type: ignore[arg-type]
                )
                for i in range(0, len(flat), 4)
            )
            return len(flat) // 4

        self._chunked(limit, one_call)
        self._ended([r.id for r in rescued if r.state == "dead"])
        return rescued

    def prune(
        self, *, now: datetime, horizons: Mapping[str, timedelta], limit: int = 10_000
    ) -> int:
        pairs: list[str] = []
        for state, horizon in horizons.items():
            if state in FINAL_STATES:  # only finished jobs have a finished_at
                pairs.extend((state, time_key(now - horizon)))
        if not pairs:
            return 0
        return self._chunked(limit, lambda chunk: int(self._run("prune", chunk, *pairs)))

    def expired(
        self, *, now: datetime, horizons: Mapping[str, timedelta], limit: int = 10_000
    ) -> builtins.list[JobRecord]:
        found: list[JobRecord] = []
        for state, horizon in horizons.items():
            if len(found) >= limit:
                break
            members = self._read(
                "zrangebylex",
                self.keys.finished(state),
                "-",
                "(" + time_key(now - horizon),
                0,
                limit - len(found),
            )
            if not members:
                continue
            pipe = self.client.pipeline(transaction=False)
            for member in members:
                pipe.hmget(self.keys.job(int(as_text(member)[-ID_WIDTH:])), *RECORD_FIELDS)
            for values in pipe.execute():
                fields = {f: v for f, v in zip(RECORD_FIELDS, values, strict=True) if v is not None}
                if fields.get("id") is not None:
                    found.append(record_of(fields))
        return found

    def waiting_kinds(self, queues: Collection[str]) -> dict[str, set[str]]:
        return {
            q: {split_claim_key(k)[0] for k in ks} for q, ks in self._waiting_keys(queues).items()
        }

    def _waiting_keys(self, queues: Collection[str]) -> dict[str, set[str]]:
        queues = list(queues)
        if not queues:
            return {}
        pipe = self.client.pipeline(transaction=False)
        for queue in queues:
            pipe.smembers(self.keys.available_kinds(queue))
        try:
            members = pipe.execute()
        except (RedisConnectionError, RedisTimeoutError) as exc:
            raise read_failed("smembers", exc, self.client) from exc
        return {
            queue: {as_text(kind) for kind in kinds}
            for queue, kinds in zip(queues, members, strict=True)
            if kinds
        }

    def lead(self, *, instance: str, now: datetime, ttl: timedelta) -> bool:
        # The expiry on the configured clock, stored in the value, decides who leads; PX (twice
        # the ttl, so real time never ends a lease the clock still grants) only lets Redis drop
        # the key of a leader that vanished.
        px = max(1, int(ttl.total_seconds() * 2000))
        return self._run("lead", instance, time_key(now), time_key(now + ttl), px) == 1

    def resign(self, *, instance: str) -> None:
        self._run("resign", instance)

    # -- cron ------------------------------------------------------------------------------
    def cron_states(self, names: Collection[str]) -> dict[str, CronState]:
        names = list(names)
        if not names:
            return {}
        values = self._read("hmget", self.keys.cron(), names)
        states = {}
        for name, value in zip(names, values, strict=True):
            if value is None:
                continue
            tick, _, last_id = as_text(value).partition("|")
            states[name] = CronState(
                name=name,
                last_tick_at=parse_time_key(tick) if tick else None,  # '': run by hand only
                last_job_id=int(last_id) if last_id else None,
            )
        return states

    def cron_advance(self, *, name: str, tick: datetime, job: NewJob | None) -> Inserted | None:
        job_args = ["0"] if job is None else ["1", *self._new_job_args(job), *_flow_args(job)]
        result = self._run("cron_advance", name, time_key(tick), *job_args)
        if not result:  # nil: not later than the last tick; []: recorded without a job
            return None
        inserted = Inserted(int(result[0]), result[1] == 1)
        if job is not None and woken_queues([job], [inserted]):
            self.wake([job.queue])
        return inserted

    def cron_trigger(self, *, name: str, job: NewJob) -> Inserted:
        result = self._run("cron_trigger", name, *self._new_job_args(job), *_flow_args(job))
        inserted = Inserted(int(result[0]), result[1] == 1)
        if woken_queues([job], [inserted]):
            self.wake([job.queue])
        return inserted

    # -- admin -----------------------------------------------------------------------------
    def get(self, job_id: int) -> JobRecord | None:
        flat = self._read("hgetall", self.keys.job(job_id))
        if not flat:
            return None
        fields = {as_text(k): v for k, v in flat.items()}
        return with_timeline(record_of(fields), fields)

    def list(self, filter: ListFilter) -> list[JobRecord]:
        limit = max(0, min(filter.limit, LIST_LIMIT_MAX))
        if (
            limit == 0
            or filter.queue == ""
            or filter.kind == ""
            or filter.after == 0
            or filter.workflow == ""
        ):
            return []  # no job has an empty queue or kind, nor an id below 1
        records: list[JobRecord] = []
        cursor = "" if filter.after is None else str(filter.after)
        # A search tests its terms here, on chunks the script returns (its id window bounds them).
        search = searches(filter)
        while len(records) < limit:
            reply = self._run(
                "list",
                cursor,
                SEARCH_CHUNK if search else limit - len(records),
                LIST_SCAN_BUDGET,
                filter.state or "",
                filter.queue or "",
                filter.kind or "",
                "" if filter.min_id is None else max(filter.min_id, 0),
                *_narrowing(filter),
                filter.workflow or "",
            )
            found = [record_of(fields_of(encoded)) for encoded in reply[1:]]
            if search:
                found = [
                    r
                    for r in found
                    if search_matches(filter, kind=r.kind, args=r.args, errors=r.errors)
                ]
            records.extend(found)
            cursor = as_text(reply[0])
            if not cursor:
                break
        return records[:limit]

    def counts(self) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = {}
        for field, value in self._read("hgetall", self.keys.counts()).items():
            state, _, queue = as_text(field).partition(":")
            n = int(value)
            if n > 0:
                counts.setdefault(queue, {})[state] = n
        return counts

    def retry(self, job_id: int, *, now: datetime) -> JobRecord | None:
        encoded = self._run("retry", job_id, time_key(now))
        if not encoded:
            return None
        record = record_of(fields_of(encoded))
        if record.state == "available":
            self.wake([record.queue])
        return record

    def cancel(self, job_id: int, *, now: datetime) -> JobRecord | None:
        encoded = self._run("cancel", job_id, time_key(now), self.channel, self.done_channel)
        if not encoded:
            return None
        record = record_of(fields_of(encoded))
        if record.state == "cancelled":
            self._ended([job_id])
        return record

    def delete(self, job_id: int) -> bool:
        deleted = bool(self._run("delete", job_id) == 1)
        if deleted:
            self._ended([job_id])
        return deleted

    # -- workflows (the scripts' "Workflows" helpers in _lib.lua) -----------------------------
    def insert_workflow(
        self, workflow: NewWorkflow, steps: Sequence[NewStep], *, last: bool, now: datetime
    ) -> builtins.list[int]:
        args: list[str] = []
        for step in steps:
            args.extend(self._new_job_args(replace(step.job, state="available", unique_key=None)))
            delay = step.ready_delay
            args.extend(
                (
                    step.name,
                    repr(step.name),
                    ",".join(str(i) for i in step.after),
                    ",".join(str(i) for i in step.after_ids),
                    "1" if step.ignore_failed else "0",
                    "" if delay is None else str(delay // timedelta(microseconds=1)),
                )
            )
        flows: tuple[str, ...] = ()
        if any(step.job.flow for step in steps):  # as in `insert`
            flows = (self._flows([step.job for step in steps]),)
        reply = self._run(
            "insert_workflow",
            workflow.id,
            workflow.name,
            time_key(workflow.created_at),
            time_key(now),
            "1" if last else "0",
            len(steps),
            compact(args),
            self.channel,
            *flows,
        )
        ids = [int(i) for i in as_text(reply).split(",") if i]
        if last:
            # The script published the wake-up for every process; this one's waiters too.
            self.wakeups.wake([step.job.queue for step in steps])
        return ids

    def workflow(self, workflow_id: str) -> WorkflowRow | None:
        reply = self._run("workflow", workflow_id)
        if not reply:
            return None
        steps = []
        dependencies: dict[int, tuple[int, ...]] = {}
        for i in range(3, len(reply), 2):
            record = record_of(fields_of(reply[i]))
            steps.append(record)
            dependencies[record.id] = tuple(int(d) for d in as_text(reply[i + 1]).split(",") if d)
        return WorkflowRow(
            id=workflow_id,
            name=as_text(reply[0]),
            created_at=parse_time_key(reply[1]),
            cancelled=as_text(reply[2]) == "1",
            steps=tuple(steps),
            dependencies=dependencies,
        )

    def cancel_workflow(self, workflow_id: str, *, now: datetime) -> bool | None:
        reply = self._run("cancel_workflow", workflow_id, time_key(now))
        if not reply:
            return None
        self._ended([int(i) for i in reply[1:]])
        return bool(reply[0])

    def dependency_results(self, job_id: int) -> dict[str, Any]:
        reply = self._run("dependency_results", job_id)
        return {
            as_text(reply[i]): stored_json(reply[i + 1] or None, fallback=None)
            for i in range(0, len(reply), 2)
        }

    # -- fair flow and sequences (kept by insert.lua and the claim scripts) -------------------
    def sequence_holder(self, job_id: int) -> int | None:
        reply = self._run("sequence_holder", str(int(job_id)))
        return None if reply is None or reply is False else int(reply)

    def fairness_state(self, queue: str) -> FairnessState:
        turn, waiting, last = self._run("fairness_state", queue)
        return FairnessState(
            turn=float(as_text(turn)),
            waiting=json.loads(as_text(waiting)),
            last={key: float(value) for key, value in json.loads(as_text(last)).items()},
        )

    # -- queue pause: one hash, read by claim.lua -------------------------------------------
    def pause(self, queue: str, *, now: datetime) -> bool:
        return int(self._read("hsetnx", self.keys.paused(), queue, time_key(now))) == 1

    def resume(self, queue: str) -> bool:
        return int(self._read("hdel", self.keys.paused(), queue)) == 1

    def paused_queues(self) -> dict[str, datetime]:
        return {
            as_text(queue): parse_time_key(at)
            for queue, at in self._read("hgetall", self.keys.paused()).items()
        }

    # -- wake-ups ---------------------------------------------------------------------------
    def wake(self, queues: Collection[str]) -> None:
        """Wake this process's waiters, then PUBLISH for other processes. A failed PUBLISH is
        logged, not raised: the jobs are already stored, and workers poll."""
        self.wakeups.wake(queues)
        try:
            self.client.publish(self.channel, encode(self._sender, queues))
        except Exception as exc:  # the write succeeded; a lost wake-up only costs latency
            logger.warning("could not publish a wake-up on %s: %s", self.channel, exc)

    def subscribe(self, queues: Collection[str]) -> Subscription:
        self.listener()
        return self.wakeups.subscribe(queues)

    def subscribe_finished(self, job_ids: Collection[int]) -> Subscription:
        subscription = super().subscribe_finished(job_ids)
        with self._listener_lock:
            if self._done_listener is None and not self._closed:
                self._done_listener = Listener(
                    self.client, self.done_channel, self.finished_wakeups, self._sender
                )
                self._done_listener.start()
        return subscription

    def _ended(self, job_ids: Sequence[int]) -> None:
        """Jobs an admin call or a rescue ended (or deleted): tell result waiters here and
        in other processes (`finish` publishes from its script)."""
        if not job_ids:
            return
        self.wake_finished(job_ids)
        try:
            self.client.publish(self.done_channel, encode(self._sender, [str(i) for i in job_ids]))
        except Exception as exc:  # the write succeeded; waiters poll
            logger.warning("could not publish finished jobs on %s: %s", self.done_channel, exc)

    def listener(self) -> Listener | None:
        """The pub/sub listener thread, started on first use (once per store). After `close()`
        none is started again: its subscriptions still get this process's wake-ups."""
        with self._listener_lock:
            if self._listener is None and not self._closed:
                self._listener = Listener(self.client, self.channel, self.wakeups, self._sender)
                self._listener.start()
            return self._listener

    # -- statistics (kept by the claim, finish and rescue scripts) ----------------------------
    def stats(
        self,
        queues: Collection[str] | None,
        *,
        since: datetime,
        until: datetime,
        resolution: Resolution = "minute",
    ) -> StatsByQueue:
        check_range(since, until, resolution)
        wanted = None if queues is None else set(queues)
        if wanted is not None and not wanted:
            return {}
        first, last = minute_number(floor_time(since, resolution)), minute_number(until)
        if resolution == "minute":
            minutes = self._stat_rows(self.keys.stat_minutes(), "stat:", 1, first, last, wanted)
            return roll_up_rows(minutes, resolution)
        # Per hour, the hour hashes the jobs' scripts keep (a day is 24 reads per queue, not
        # 1,440), and the rolled-up history where an hour has one (its minutes may be gone).
        hours = self._stat_rows(self.keys.stat_hours(), "stath:", 60, first, last, wanted)
        rolled = self._stat_rows(self.keys.stat_histories(), "sthist:", 60, first, last, wanted)
        as_hours = {q: {n // 60: row for n, row in rows.items()} for q, rows in rolled.items()}
        return hourly_points(as_hours, hours)

    def _stat_rows(
        self, index: str, kind: str, per: int, first: int, last: int, wanted: set[str] | None
    ) -> dict[str, dict[int, Sequence[int]]]:
        """``{queue: {minute number: row}}`` of the statistics hashes `index` lists (``kind``
        keys, one per `per` minutes) between minutes `first` and `last`."""
        found = [
            as_text(key) for key in self._read("zrangebyscore", index, first // per, last // per)
        ]
        # "<prefix><kind><number>:<queue>": the number is digits, so the queue is the rest.
        named = []
        for key in found:
            digits, _, queue = key[len(self.keys.prefix) + len(kind) :].partition(":")
            if wanted is None or queue in wanted:
                named.append((key, int(digits) * per, queue))
        pipe = self.client.pipeline(transaction=False)
        for key, _, _ in named:
            pipe.hgetall(key)  # only the counters that moved: fewer than STAT_COLUMNS
        try:
            hashes = pipe.execute() if named else []
        except (RedisConnectionError, RedisTimeoutError) as exc:
            raise read_failed("hgetall", exc, self.client) from exc
        rows: dict[str, dict[int, Sequence[int]]] = {}
        for (_, number, queue), values in zip(named, hashes, strict=True):
            if values:  # else it expired since the range read
                fields = {as_text(k): int(v) for k, v in values.items()}
                rows.setdefault(queue, {})[number] = [fields.get(c, 0) for c in STAT_COLUMNS]
        return rows

    def roll_up_stats(self, *, now: datetime, keep: timedelta) -> int:
        # Expiring an hour after its horizon: the prune drops it on time, the expiry only when
        # no leader prunes any more.
        expiry = int((keep + timedelta(hours=1)).total_seconds())
        return int(self._run("stats_roll", hour_number(now) - 1, expiry))

    def prune_stats(self, *, minutes_before: datetime, hours_before: datetime) -> None:
        # The minute and hour hashes the jobs' scripts write also expire by themselves,
        # `STATS_KEEP` after their last write.
        top = self._read("zrevrange", self.keys.stat_histories(), 0, 0, True)
        through = int(top[0][1]) if top else None
        keep_from = minutes_to_prune(minutes_before, through)
        indexes = (
            (self.keys.stat_minutes(), keep_from),
            (self.keys.stat_hours(), keep_from // 60),
            (self.keys.stat_histories(), hour_number(hours_before)),
        )
        for index, oldest in indexes:
            old = self._read("zrangebyscore", index, "-inf", f"({oldest}")
            for start in range(0, len(old), 500):
                chunk = old[start : start + 500]
                pipe = self.client.pipeline(transaction=False)
                for key in chunk:  # one key a command: a cluster pipeline takes no more
                    pipe.delete(key)
                pipe.zrem(index, *chunk)
                try:
                    pipe.execute()
                except (RedisConnectionError, RedisTimeoutError) as exc:
                    raise write_failed("delete", exc, self.client) from exc

    # -- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the listener. The command connections belong to django-redis's pool."""
        with self._listener_lock:
            self._closed = True
            listeners = [self._listener, self._done_listener]
            self._listener = self._done_listener = None
        for listener in listeners:
            if listener is not None:
                listener.stop()
