"""Crashes: `runjobs` processes killed with SIGKILL at random moments and at named points, on
SQLite, PostgreSQL and Redis. Each scenario ends with the exact reconciliation of
`tests.chaos.harness` (nothing lost, no finished job run again, every duplicate explained).
"""

from __future__ import annotations

import random
import signal
import time
from collections import Counter, defaultdict

import pytest

from tests.chaos.harness import LONG, NAMED_POINTS, Cluster, random_kills, scale, sized
from tests.e2e.conftest import Spec, wait_until

pytestmark = [pytest.mark.chaos, pytest.mark.e2e]


def test_random_kills_lose_nothing(cluster: Cluster) -> None:
    """CI: >= 20 kills over >= 500 jobs; the long run: >= 200 kills over >= 20,000 jobs.

    Besides the random kills, replacement processes kill themselves at named points (after a
    claim, inside a handler, just before and just after an outcome write), two jobs kill
    their worker on every attempt, and a cron entry ticks every minute, its leader killing
    itself right after it recorded a tick: the next leader must not enqueue that tick again."""
    rng = random.Random(13)
    jobs = sized("jobs", 500, 20_000)
    kills = sized("kills", 20, 200)
    cluster.with_cron(kill_after_tick=True)
    cluster.enqueue(
        Spec("chaos.task", count=jobs // 2, args={"seconds": 0.1}),
        Spec("chaos.task", count=jobs // 2 - 10, args={"seconds": 0.4}),
        Spec("chaos.task", count=10, args={"mode": "fail", "fail_attempts": 1}),
        Spec("chaos.suicide", count=2),
    )
    cluster.start(4)
    started = time.monotonic()
    done = random_kills(cluster, kills=kills, rng=rng, pause=(0.05, 0.3))
    print(f"kills took {time.monotonic() - started:.1f} s")
    cluster.wait_all_final(timeout=scale(120, 1800))
    seconds = time.monotonic() - started
    report = cluster.reconcile()
    print(
        f"{cluster.backend.name}: {done} kills + {cluster.restarts - done} self-kills, "
        f"{report.enqueued} jobs in {seconds:.1f} s ({report.enqueued / seconds:.0f} jobs/s)"
    )
    assert done >= kills
    log = cluster.log()
    fired = Counter(r["point"] for r in log if r["e"] == "kill")
    print(f"{cluster.backend.name}: kill points hit: {dict(sorted(fired.items()))}")
    expected = {point.partition(":")[0] for point in NAMED_POINTS}
    # A tick comes once a minute: the short run may end before its first one.
    assert set(fired) - {"cron_tick"} == expected
    if LONG:
        assert fired["cron_tick"] >= 1, fired
    # Exactly one job per cron tick, however many leaders died right after recording one.
    jobs_per_tick: dict[str, set[int]] = defaultdict(set)
    for record in log:
        if record["e"] == "tick":
            jobs_per_tick[record["tick"]].add(record["id"])
    twice = {tick: ids for tick, ids in jobs_per_tick.items() if len(ids) > 1}
    assert not twice, f"a cron tick enqueued more than one job: {twice}"
    print(f"{cluster.backend.name}: {len(jobs_per_tick)} cron ticks ran, one job each")
    assert report.dead == 2  # the two suicides, after their two attempts
    suicides = cluster.enqueued[-2:]
    for record in cluster.backend.jobs(suicides).values():
        assert record["state"] == "dead"
        assert [e["type"] for e in record["errors"]] == ["LeaseExpired", "LeaseExpired"]


def leaders(cluster: Cluster) -> dict[int, bool]:
    """Each process's last leadership record: pid -> leads."""
    state: dict[int, bool] = {}
    for record in cluster.log():
        if record["e"] == "leader":
            state[record["pid"]] = record["leader"]
    return state


def test_killing_the_leader_hands_leadership_over_within_the_lease(cluster: Cluster) -> None:
    cluster.start(2)
    leader_pid = wait_until(
        lambda: next((pid for pid, leads in leaders(cluster).items() if leads), None),
        "a leader",
        30,
    )
    for worker in cluster.workers:
        worker.wait_ready()
    (leader,) = [w for w in cluster.workers if w.pid == leader_pid]
    killed_at = time.monotonic()
    cluster.kill(leader)
    follower_pid = wait_until(
        lambda: next(
            (pid for pid, leads in leaders(cluster).items() if leads and pid != leader_pid), None
        ),
        "a new leader",
        30,
    )
    handover = time.monotonic() - killed_at
    print(f"{cluster.backend.name}: leadership handed over {handover:.2f} s after the kill")
    # Within one lease, plus one maintenance tick (about LEASE/2) for the follower to look.
    assert handover <= cluster.lease * 1.5 + 1.0, handover
    (follower,) = [w for w in cluster.workers if w.pid == follower_pid]
    follower.signal(signal.SIGTERM)
    assert follower.wait(timeout=20) == 0
