"""The operators' audit log: one `AuditEntry` per action an operator took on a surface (the
JSON routes, the dashboard, the CLI, the Django admin): who, what, on which target, when.
`operations.audit` records them; every store keeps them (`Store.record_audit`,
`Store.audit_entries`, `Store.prune_audit`) and the leader prunes them like finished jobs.
Leaf of the stores package: imports nothing of the project.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

#: How long entries are kept by default (the leader's prune deletes older ones).
AUDIT_KEEP = timedelta(days=30)
#: The most entries one `Store.audit_entries` call returns.
AUDIT_PAGE_MAX = 500
#: The surfaces an entry may name.
SURFACES = ("route", "dashboard", "cli", "admin", "api")


@dataclass(frozen=True, kw_only=True)
class AuditEntry:
    """One operator action. `id` is the store's (0 before it is recorded; higher is later);
    `actor` a user name or "cli"; `action` such as "retry", "delete", "pause", "worker.stop";
    `target` what it acted on ("job 12", "queue mail", "worker host:1:ab", "3 jobs");
    `detail` anything more, as short text."""

    at: datetime
    actor: str
    action: str
    target: str
    surface: str
    detail: str = ""
    id: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at": self.at.isoformat(),
            "actor": self.actor,
            "action": self.action,
            "target": self.target,
            "surface": self.surface,
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], *, id: int | None = None) -> AuditEntry:
        return cls(
            id=int(data.get("id", 0)) if id is None else id,
            at=datetime.fromisoformat(data["at"]),
            actor=str(data["actor"]),
            action=str(data["action"]),
            target=str(data["target"]),
            surface=str(data["surface"]),
            detail=str(data.get("detail", "")),
        )


class MemoryAudit:
    """The memory store's audit log (a mixin of `MemoryStore`): a list, its own lock."""

    def _audit_list(self) -> list[AuditEntry]:
        found: list[AuditEntry] | None = self.__dict__.get("_audit")
        if found is None:
            found = self.__dict__.setdefault("_audit", [])
        return found

    def record_audit(self, entry: AuditEntry) -> None:
        import dataclasses
        import threading

        lock = self.__dict__.setdefault("_audit_lock", threading.Lock())
        with lock:
            entries = self._audit_list()
            last = entries[-1].id if entries else 0
            entries.append(dataclasses.replace(entry, id=last + 1))

    def audit_entries(
        self, *, action: str | None = None, limit: int = 100, before: int | None = None
    ) -> list[AuditEntry]:
        limit = max(0, min(limit, AUDIT_PAGE_MAX))
        found = [
            e
            for e in reversed(list(self._audit_list()))
            if (action is None or e.action == action) and (before is None or e.id < before)
        ]
        return found[:limit]

    def prune_audit(self, *, before: datetime) -> int:
        import threading

        lock = self.__dict__.setdefault("_audit_lock", threading.Lock())
        with lock:
            entries = self._audit_list()
            kept = [e for e in entries if e.at >= before]
            gone = len(entries) - len(kept)
            entries[:] = kept
            return gone
