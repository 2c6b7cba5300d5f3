"""The Redis data layout: every key name and every sortable encoding, in Python and in Lua.

This module is the only place that knows a key name. The Lua scripts build keys for ids they
discover at run time (the job hash of an id popped from a sorted set), so the same names are
also given here as a Lua prelude (`LUA`) that `store.Scripts` prepends to every script; a test
checks that both halves agree. Every key starts with ``KEY_PREFIX`` (passed to each script as
``ARGV[1]``), so two apps sharing one Redis database never touch each other's keys.

Layout (``P`` = KEY_PREFIX, ``<id>`` = the job id, ``<pid>`` = the id zero-padded):

=============================  ======  =========================================================
``P next_id``                   string  INCR counter for job ids
``P job:<id>``                  hash    one job (fields below)
``P av:<len(q)>:<q>:<kind>``    zset    available jobs of one queue and kind; score = -priority,
                                        member = ``sched_key + pid`` (so ZRANGE order is
                                        priority desc, scheduled_at asc, id asc — exactly)
``P ak:<q>``                    set     kinds that have available jobs in queue q
``P waiting``                   zset    scheduled + retrying jobs, member ``sched_key + pid``
``P running``                   zset    running jobs, member ``lease_key + pid``
``P fin:<state>``               zset    completed / dead / cancelled, member ``finished_key + pid``
``P st:<state>``                zset    ids of one state (admin list), member ``pid``
``P all`` / ``P queue:<q>`` /   zset    ids of all jobs / of one queue / of one kind (admin list)
``P kind:<kind>``
``P u:<unique key>``            string  id of the job holding that unique key; for a debounce
                                        key (``debounce:...``), the last job it made, expiring
                                        once no enqueue can fold into that job
``P counts``                    hash    ``"<state>:<queue>" -> n`` (kept by the scripts)
``P leader``                    string  ``"<instance>|<expiry key>"``, with PX for cleanup
``P cron``                      hash    ``name -> "<tick key>|<last job id>"``
``P paused``                    hash    ``queue -> <paused-at time key>`` (claim.lua reads it)
``P wf:<workflow id>``          hash    a workflow: ``name created cancelled``
``P wfjobs:<workflow id>``      zset    ids of its steps (member ``pid``)
``P dn:<id>``                   list    ids of the steps that run after job <id> (its dependents)
``P limits``                    hash    ``queue -> JSON`` of the limits set at runtime
``P lr:<len(q)>:<q>``           hash    ids of q's jobs a limited claim took (``id -> 1``),
                                        dropped once no longer running
``P lw:<len(q)>:<q>:<part>``    zset    claim times (epoch seconds) of q's partition ``part``
                                        in its rate window; expires with the window
``P stat:<minute>:<q>``         hash    run statistics of queue q in one minute (minutes since
                                        1970 UTC): fields `stats.STAT_COLUMNS`; expires
                                        `stats.STATS_KEEP` after its last write
``P stath:<hour>:<q>``          hash    the same summed over one hour (hours since 1970 UTC),
                                        kept with each minute's: a day is 24 reads, not 1,440
``P statm`` / ``P stath``       zset    the ``stat:`` / ``stath:`` keys, scored by their minute
                                        / hour (prune and `stats` find them there)
``P sthist:<hour>:<q>``         hash    an ended hour's ``stath:`` copied by the leader's roll-up
                                        (`stats.py`), kept for ``STATS['HOURS']`` (it expires
                                        that long after its roll-up)
``P sthist``                    zset    the ``sthist:`` keys, scored by their hour
``P workers``                   hash    ``worker id -> its record as JSON`` (worker presence)
``P worker_controls``           hash    ``worker id -> an operator's request (quiet/stop) as JSON``
``P audit``                     zset    the operators' audit log: members ``padded id + JSON``;
                                        score = seconds since the Unix epoch (capped)
``P audit_seq``                 string  the audit log's id counter
``P worker_expiry``             zset    worker ids; score = the record's expiry in seconds since
                                        the Unix epoch (a double: presence needs no microsecond)
=============================  ======  =========================================================

Every sorted set except ``av:`` has score 0 and is read with ZRANGEBYLEX: members are fixed-width
digit strings, so byte order is time order then id order, exact to the microsecond for every
`datetime` (doubles would lose microseconds after 2255 and cannot hold years before 1970).
Job hash fields: ``id kind queue state args meta priority attempt max errors created sched
attempted finished lease lease_iso worker token ukey uscope result dkey`` (times as time keys;
``lease``, ``lease_iso`` and ``worker`` describe the last claim and mean something only while
running; ``result``, JSON, only on a completed job that returned a value; ``dkey``, the
debounce key of a debounced job). A workflow step also
has ``wf step srepr deps waiting ignore rdelay cby``: its workflow, name (and the name's Python
repr, for error messages), its dependencies' ids (comma-separated), how many it still waits for,
``1`` when it ignores failures, its delay from readiness (microseconds) and the dependency whose
failure cancelled it.

Redis Cluster (`cluster.RedisClusterStore`). On one node the layout above is used as it is
(nothing below changes a key of it). On a cluster the same names are used under another prefix:

- the keys of the queues of hash slot ``s`` (everything above that names a queue, a job, a
  state, a workflow, the counts, pauses, limits and statistics) are under
  ``P{<slot_tag(s)>}``: `slot_tag` is ``"<s>-<n>"`` with the first hex ``n`` that hashes to
  ``s``, and a queue's slot is the slot of its name (`queue_slot`, Redis's rule, so a ``{tag}``
  in queue names groups queues). ``waiting``, ``running``, ``counts``... are then per slot;
- ``leader``, ``workers``, ``worker_expiry``, ``next_id`` (the cluster-wide id counter), the
  cron entries recorded without a job, and ``queues`` (a set of every queue that has had a job,
  a pause or a limit) are under ``P{g}`` (`GLOBAL_TAG`); cron entries recorded with a job are
  in the slot of the job's queue (the cluster store merges them);
- a job id is ``sequence * SLOTS + slot`` (`job_slot`), ``sequence`` from the global
  ``next_id``, reserved by the caller before the insert script (which gets the first id after
  a NUL in ARGV[1], see `LUA`): ids grow in enqueue order across slots, and a job's keys are
  found from its id alone.

A script on a cluster declares one key, the slot's prefix, so the client sends it to the
slot's master, and every key it builds shares that prefix's hash tag.
"""

from __future__ import annotations

import binascii
import functools
from datetime import UTC, datetime, timedelta

from anole_jobs.stores.stats import RUNTIME_BUCKETS_MS, STATS_KEEP

#: Seconds from the time keys' origin (0001-01-01) to 1970-01-01, both UTC.
EPOCH_SECONDS = 62_135_596_800
#: Digits of a time key: microseconds since 0001-01-01T00:00Z (datetime.max needs 18).
TIME_WIDTH = 18
#: Digits of a padded id in sorted-set members (int64 needs 19).
ID_WIDTH = 19

#: Hash slots of a Redis Cluster.
SLOTS = 16_384
#: The hash tag of the keys that belong to no queue on a cluster (leader, workers, cron entries
#: recorded without a job, the known queues, the id counter).
GLOBAL_TAG = "g"

_ORIGIN = datetime(1, 1, 1, tzinfo=UTC)
_MICROS_PER_DAY = 86_400 * 1_000_000


def time_key(moment: datetime) -> str:
    """`moment` (aware) as a fixed-width, lexically sortable string of microseconds."""
    if moment.tzinfo is None:
        raise ValueError(f"the Redis store needs aware datetimes, got {moment!r}")
    delta = moment - _ORIGIN
    micros = delta.days * _MICROS_PER_DAY + delta.seconds * 1_000_000 + delta.microseconds
    if micros < 0:
        raise ValueError(f"{moment!r} is before 0001-01-01T00:00Z")
    return f"{micros:0{TIME_WIDTH}d}"


def parse_time_key(value: str | bytes) -> datetime:
    """The aware UTC datetime a `time_key` encodes."""
    return _ORIGIN + timedelta(microseconds=int(value))


#: The job hash fields a record is built from, in the order scripts return them: one JSON array
#: per job (missing fields as null) instead of an HGETALL reply, so the client parses one bulk
#: string per job rather than two per field.
RECORD_FIELDS = (
    "id",
    "kind",
    "queue",
    "state",
    "args",
    "meta",
    "priority",
    "attempt",
    "max",
    "errors",
    "created",
    "sched",
    "attempted",
    "finished",
    "ukey",
    "token",
    "result",
    "wf",
    "step",
    "steps",
    "ver",
)


def key_slot(name: str | bytes) -> int:
    """The cluster hash slot of a key name, Redis's rule: CRC16 of the hash tag (the text
    between the first ``{`` and the next ``}``, when not empty) or else of the whole name."""
    raw = name.encode() if isinstance(name, str) else name
    start = raw.find(b"{")
    if start >= 0:
        end = raw.find(b"}", start + 1)
        if end > start + 1:
            raw = raw[start + 1 : end]
    return binascii.crc_hqx(raw, 0) % SLOTS


def queue_slot(queue: str) -> int:
    """The slot of a queue's keys on a cluster: the slot of its name as a key, so queues whose
    names share a hash tag (``{orders}mail``, ``{orders}pay``) share a slot."""
    return key_slot(queue)


@functools.cache
def slot_tag(slot: int) -> str:
    """A hash tag of `slot`: ``"<slot>-<n>"`` with the first hex counter n that hashes there (the
    slot number first keeps tags of different slots apart; about 16,000 CRCs, once per slot)."""
    if not 0 <= slot < SLOTS:
        raise ValueError(f"a cluster slot is 0..{SLOTS - 1}, got {slot}")
    n = 0
    while True:
        tag = f"{slot}-{n:x}"
        if binascii.crc_hqx(tag.encode(), 0) % SLOTS == slot:
            return tag
        n += 1


def job_slot(job_id: int | str) -> int:
    """The slot of a job on a cluster: its id is ``sequence * SLOTS + slot``."""
    return int(job_id) % SLOTS


class Keys:
    """Key names under one prefix (Python half; the Lua half is `LUA`)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    # -- a cluster: the same names under a prefix with a hash tag ----------------------------
    def at_slot(self, slot: int) -> Keys:
        """The keys of the queues of `slot` (their jobs, indexes, counts, ...) on a cluster."""
        return Keys(f"{self.prefix}{{{slot_tag(slot)}}}")

    def for_queue(self, queue: str) -> Keys:
        return self.at_slot(queue_slot(queue))

    def for_job(self, job_id: int | str) -> Keys:
        return self.at_slot(job_slot(job_id))

    def cluster_global(self) -> Keys:
        """The keys that belong to no queue on a cluster, in one slot of their own."""
        return Keys(f"{self.prefix}{{{GLOBAL_TAG}}}")

    def known_queues(self) -> str:
        """(Cluster, global slot) set of every queue that has had a job, a pause or a limit."""
        return f"{self.prefix}queues"

    def next_id(self) -> str:
        return f"{self.prefix}next_id"

    def job(self, job_id: int | str) -> str:
        return f"{self.prefix}job:{job_id}"

    def available(self, queue: str, kind: str) -> str:
        # The byte length of the queue keeps ("a:b", "c") and ("a", "b:c") apart.
        return f"{self.prefix}av:{len(queue.encode())}:{queue}:{kind}"

    def available_kinds(self, queue: str) -> str:
        return f"{self.prefix}ak:{queue}"

    def waiting(self) -> str:
        return f"{self.prefix}waiting"

    def running(self) -> str:
        return f"{self.prefix}running"

    def finished(self, state: str) -> str:
        return f"{self.prefix}fin:{state}"

    def by_state(self, state: str) -> str:
        return f"{self.prefix}st:{state}"

    def all(self) -> str:
        return f"{self.prefix}all"

    def by_queue(self, queue: str) -> str:
        return f"{self.prefix}queue:{queue}"

    def by_kind(self, kind: str) -> str:
        return f"{self.prefix}kind:{kind}"

    def unique(self, key: str) -> str:
        return f"{self.prefix}u:{key}"

    def counts(self) -> str:
        return f"{self.prefix}counts"

    def leader(self) -> str:
        return f"{self.prefix}leader"

    def cron(self) -> str:
        return f"{self.prefix}cron"

    def paused(self) -> str:
        return f"{self.prefix}paused"

    def workflow(self, workflow_id: str) -> str:
        return f"{self.prefix}wf:{workflow_id}"

    def dependents(self, job_id: int | str) -> str:
        return f"{self.prefix}dn:{job_id}"

    def limits(self) -> str:
        return f"{self.prefix}limits"

    def stat(self, minute: int, queue: str) -> str:
        return f"{self.prefix}stat:{minute}:{queue}"

    def stat_hour(self, hour: int, queue: str) -> str:
        return f"{self.prefix}stath:{hour}:{queue}"

    def stat_history(self, hour: int, queue: str) -> str:
        return f"{self.prefix}sthist:{hour}:{queue}"

    def stat_histories(self) -> str:
        return f"{self.prefix}sthist"

    def stat_minutes(self) -> str:
        return f"{self.prefix}statm"

    def stat_hours(self) -> str:
        return f"{self.prefix}stath"

    def workers(self) -> str:
        return f"{self.prefix}workers"

    def worker_expiry(self) -> str:
        return f"{self.prefix}worker_expiry"

    def worker_controls(self) -> str:
        return f"{self.prefix}worker_controls"

    def audit(self) -> str:
        return f"{self.prefix}audit"

    def audit_seq(self) -> str:
        return f"{self.prefix}audit_seq"

    def pattern(self) -> str:
        """A SCAN pattern matching every key of this prefix (tests clean up with it)."""
        escaped = "".join("\\" + c if c in "*?[]\\" else c for c in self.prefix)
        return escaped + "*"

    def channel(self, db: int) -> str:
        """The pub/sub channel for wake-ups. Channels are server-wide (not per database), so
        the name carries the database number as well as the prefix."""
        return f"{self.prefix}wakeups:db{db}"

    def done_channel(self, db: int) -> str:
        """The pub/sub channel of finished jobs, for result waiters (as `channel`)."""
        return f"{self.prefix}done:db{db}"


#: The Lua half of `Keys`, plus the member encodings. `P` is the prefix (ARGV[1]). On a cluster
#: (see "Redis Cluster" above) the caller declares one key, so ``#KEYS > 0`` says "cluster", and
#: ARGV[1] is the slot's prefix, followed, for the scripts that insert jobs, by a NUL and the
#: first of the ids the caller reserved (`ID_NEXT`, then every `ID_STRIDE`).
LUA = f"""
local P, ID_NEXT = ARGV[1], nil
local CLUSTER = #KEYS > 0
local ID_STRIDE = CLUSTER and {SLOTS} or 1
do
  local cut = string.find(P, '\\0', 1, true)
  if cut then
    P, ID_NEXT = string.sub(ARGV[1], 1, cut - 1), tonumber(string.sub(ARGV[1], cut + 1))
  end
end
local ID_WIDTH = {ID_WIDTH}
local RECORD_FIELDS = {{{", ".join(repr(f) for f in RECORD_FIELDS)}}}
local function K_next_id() return P .. 'next_id' end
local function K_job(id) return P .. 'job:' .. id end
local function K_av(queue, kind) return P .. 'av:' .. #queue .. ':' .. queue .. ':' .. kind end
local function K_ak(queue) return P .. 'ak:' .. queue end
local function K_waiting() return P .. 'waiting' end
local function K_running() return P .. 'running' end
local function K_fin(state) return P .. 'fin:' .. state end
local function K_st(state) return P .. 'st:' .. state end
local function K_all() return P .. 'all' end
local function K_queue(queue) return P .. 'queue:' .. queue end
local function K_kind(kind) return P .. 'kind:' .. kind end
local function K_u(key) return P .. 'u:' .. key end
local function K_counts() return P .. 'counts' end
local function K_leader() return P .. 'leader' end
local function K_cron() return P .. 'cron' end
local function K_paused() return P .. 'paused' end
local function K_wf(id) return P .. 'wf:' .. id end
local function K_wfjobs(id) return P .. 'wfjobs:' .. id end
local function K_dn(id) return P .. 'dn:' .. id end
local function K_limits() return P .. 'limits' end
local function K_lr(queue) return P .. 'lr:' .. #queue .. ':' .. queue end
local function K_fair(queue) return P .. 'fair:' .. queue end
local function K_seq(key) return P .. 'sq:' .. key end
local function K_lw(queue, part) return P .. 'lw:' .. #queue .. ':' .. queue .. ':' .. part end
local function K_stat(minute, queue)
  return P .. 'stat:' .. string.format('%d', minute) .. ':' .. queue
end
local function K_stath(hour, queue)
  return P .. 'stath:' .. string.format('%d', hour) .. ':' .. queue
end
local function K_statm() return P .. 'statm' end
local function K_sthist(hour, queue)
  return P .. 'sthist:' .. string.format('%d', hour) .. ':' .. queue
end
local function K_sthistm() return P .. 'sthist' end
local function K_stathm() return P .. 'stath' end
-- Run statistics: seconds from 0001-01-01 (time keys) to 1970-01-01, bucket bounds (ms), keep.
local EPOCH_SECONDS = {EPOCH_SECONDS}
local STAT_BOUNDS = {{{", ".join(str(b) for b in RUNTIME_BUCKETS_MS)}}}
local STATS_KEEP_SECONDS = {int(STATS_KEEP.total_seconds())}
local function K_workers() return P .. 'workers' end
local function K_known_queues() return P .. 'queues' end
local function K_worker_expiry() return P .. 'worker_expiry' end
local function K_worker_controls() return P .. 'worker_controls' end
local function K_audit() return P .. 'audit' end
local function K_audit_seq() return P .. 'audit_seq' end
-- A job id as a canonical decimal string (ids are exact in a Lua double up to 2^53).
local function idstr(id) return string.format('%d', tonumber(id)) end
local function pid(id) return string.format('%0' .. ID_WIDTH .. 'd', tonumber(id)) end
-- The id at the end of a sorted-set member.
local function member_id(member) return idstr(string.sub(member, -ID_WIDTH)) end
"""
