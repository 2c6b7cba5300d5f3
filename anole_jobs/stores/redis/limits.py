"""Queue limits on the Redis store (docs/limits.md): the limited claim is one script,
`claim_limited.lua`, so no interleaving of claims can exceed a limit; the held count is
another (`limits_held.lua`); runtime limits are the ``limits`` hash (see `keys`)."""

from __future__ import annotations

import json
from collections.abc import Collection
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from anole_jobs.limits import Limits, RateLimit, RuntimeLimits
from anole_jobs.stores.base import ClaimedJob, LimitedClaim, RunRef
from anole_jobs.stores.redis.keys import Keys, time_key
from anole_jobs.stores.redis.records import fields_of, record_of


def _settings_args(limits: Limits, now: datetime) -> list[str]:
    """now (epoch seconds), an unused slot, concurrency, rate count and period, fields."""
    ts = now.timestamp()
    rate = limits.rate_limit
    return [
        repr(ts),
        "",
        str(limits.global_concurrency) if limits.global_concurrency is not None else "",
        str(rate.count) if rate is not None else "",
        repr(rate.seconds) if rate is not None else "",
        json.dumps(list(limits.partition)),
    ]


class RedisLimits:
    """Mixed into `RedisStore`: the limits part of the store contract."""

    if TYPE_CHECKING:  # what it uses of `RedisStore`
        keys: Keys

        def _run(self, script: str, *args: object) -> Any: ...
        def _read(self, method: str, *args: object) -> Any: ...

    def claim_limited(
        self,
        queue: str,
        *,
        limits: Limits,
        kinds: Collection[str] | None,
        limit: int,
        now: datetime,
        lease_until: datetime,
        worker: str,
    ) -> LimitedClaim:
        if limit <= 0 or (kinds is not None and not kinds):
            return LimitedClaim(jobs=[])
        selector = ["*"] if kinds is None else ["+", *sorted(kinds)]
        reply = self._run(
            "claim_limited",
            queue,
            limit,
            time_key(now),
            time_key(lease_until),
            lease_until.isoformat(),
            worker,
            *_settings_args(limits, now),
            *selector,
        )
        held, reopens, rows = reply[0], reply[1], reply[2:]
        claimed = []
        for encoded in rows:
            fields = fields_of(encoded)
            record = record_of(fields)
            run = RunRef(record.id, record.attempt, int(fields["token"]))
            claimed.append(ClaimedJob(record=record, run=run, lease_until=lease_until))
        reopens_at = None
        if reopens:
            reopens_at = now + timedelta(seconds=float(reopens) - now.timestamp())
        return LimitedClaim(jobs=claimed, held=held in (b"1", "1"), reopens_at=reopens_at)

    def set_limits(self, queue: str, limits: RuntimeLimits) -> None:
        if limits.empty:
            self._read("hdel", self.keys.limits(), queue)
            return
        rate = limits.rate_limit
        value: dict[str, float] = {}
        if limits.global_concurrency is not None:
            value["gc"] = limits.global_concurrency
        if rate is not None:
            value["rc"], value["rs"] = rate.count, rate.seconds
        self._read("hset", self.keys.limits(), queue, json.dumps(value))

    def runtime_limits(self) -> dict[str, RuntimeLimits]:
        found = {}
        for queue, raw in self._read("hgetall", self.keys.limits()).items():
            value = json.loads(raw)
            rate = None
            if value.get("rc") is not None:
                rate = RateLimit(int(value["rc"]), timedelta(seconds=float(value["rs"])))
            name = queue.decode() if isinstance(queue, bytes) else queue
            found[name] = RuntimeLimits(global_concurrency=value.get("gc"), rate_limit=rate)
        return found

    def held_count(self, queue: str, limits: Limits, *, now: datetime) -> int:
        return int(self._run("limits_held", queue, *_settings_args(limits, now)))
