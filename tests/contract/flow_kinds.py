"""Kinds for the fair flow and sequence tests (no handler: the tests claim through the store)."""

from __future__ import annotations

from dataclasses import dataclass

from anole_jobs import kind


@kind("flow.tenant", queue="fair")
@dataclass
class TenantJob:
    customer: str = "a"
    n: int = 0


@kind("flow.account", queue="default", sequence="account_id")
@dataclass
class AccountJob:
    account_id: int = 0
    n: int = 0
