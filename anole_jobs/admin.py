"""The jobs table in the Django admin (R38), for the database store.

Registered only when ``django.contrib.admin`` is installed (this module imports nothing of it
otherwise, so importing it never fails). The rows are read-only: every change goes through
the `jobs` facade — the retry, cancel and delete actions call `jobs.retry/cancel/delete`,
which are fenced like every admin write, never raw updates. The page shows only while the
configured store is a database one (the memory and Redis stores have no table); it reads
the store's own database alias.

Who may see it: ``ANOLE_JOBS["ADMIN_PERMISSION"]`` (default: active staff, as for the JSON
routes), or Django's own view/change permissions on the model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from django.apps import apps

from anole_jobs import conf

if TYPE_CHECKING:
    from django.db.models import QuerySet
    from django.http import HttpRequest


def store_alias() -> str | None:
    """The database alias of the configured store, or None for memory and Redis."""
    store = conf.raw_settings().get("STORE", {"database": "default"})
    if isinstance(store, Mapping) and isinstance(store.get("database"), str):
        return str(store["database"])
    return None


def shorten(text: str, width: int = 80) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= width else line[: width - 1] + "…"


if apps.is_installed("django.contrib.admin"):
    from django.contrib import admin, messages
    from django.utils.html import format_html, format_html_join

    from anole_jobs.admin_api.permissions import refusal
    from anole_jobs.api import jobs
    from anole_jobs.stores.database.models import Job

    def _pretty(value: Any) -> str:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)

    @admin.register(Job)
    class JobAdmin(admin.ModelAdmin):
        list_display = (
            "id",
            "kind",
            "queue",
            "state",
            "attempts",
            "scheduled_at",
            "finished_at",
            "last_error",
        )
        list_filter = ("state", "queue", "kind")
        search_fields = ("kind",)
        search_help_text = "A job id, or part of a kind"
        ordering = ("-id",)
        list_per_page = 50
        show_full_result_count = False  # no COUNT(*) over a large table on every page
        actions = ("retry_jobs", "cancel_jobs", "delete_jobs")
        fields = (
            ("id", "kind", "queue", "state"),
            ("priority", "attempt", "max_attempts"),
            ("created_at", "scheduled_at", "attempted_at", "finished_at"),
            ("lease_until", "claimed_by"),
            ("unique_key", "unique_scope"),
            "args_json",
            "meta_json",
            "errors_display",
        )
        readonly_fields = tuple(
            name for row in fields for name in ((row,) if isinstance(row, str) else row)
        )

        # -- who may see and act ------------------------------------------------------------
        def _permitted(self, request: HttpRequest) -> bool:
            return refusal(request) is None

        def has_module_permission(self, request: HttpRequest) -> bool:
            if store_alias() is None:
                return False
            return self._permitted(request) or super().has_module_permission(request)

        def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
            if store_alias() is None:
                return False
            return self._permitted(request) or super().has_view_permission(request, obj)

        def has_operate_permission(self, request: HttpRequest) -> bool:
            """May run the actions (through the facade)."""
            if store_alias() is None:
                return False
            return self._permitted(request) or super().has_change_permission(request)

        def has_add_permission(self, request: HttpRequest) -> bool:
            return False

        def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
            return False

        def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
            return False  # the delete action goes through jobs.delete instead

        def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
            return super().get_queryset(request).using(store_alias() or "default")

        def get_search_results(
            self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
        ) -> tuple[QuerySet[Any], bool]:
            term = search_term.strip()
            if term.isdigit() and len(term) < 19:
                return queryset.filter(id=int(term)) | queryset.filter(kind__icontains=term), False
            return super().get_search_results(request, queryset, search_term)

        # -- columns and fields ---------------------------------------------------------------
        @admin.display(description="attempts")
        def attempts(self, job: Job) -> str:
            return f"{job.attempt}/{job.max_attempts}"

        @admin.display(description="last error")
        def last_error(self, job: Job) -> str:
            if not job.errors:
                return ""
            error = job.errors[-1]
            return shorten(f"{error.get('type', '')}: {error.get('message', '')}", 60)

        @admin.display(description="args")
        def args_json(self, job: Job) -> str:
            return format_html("<pre>{}</pre>", _pretty(job.args))

        @admin.display(description="meta")
        def meta_json(self, job: Job) -> str:
            return format_html("<pre>{}</pre>", _pretty(job.meta))

        @admin.display(description="errors")
        def errors_display(self, job: Job) -> str:
            if not job.errors:
                return "none"
            return format_html_join(
                "",
                "<div><p><strong>attempt {} · {}</strong> at {}</p><p>{}</p><pre>{}</pre></div>",
                (
                    (
                        error.get("attempt", "?"),
                        error.get("type", ""),
                        error.get("at", ""),
                        error.get("message", ""),
                        error.get("traceback", ""),
                    )
                    for error in job.errors
                ),
            )

        # -- actions: through the facade (fenced) --------------------------------------------
        def _act(
            self,
            request: HttpRequest,
            queryset: QuerySet[Any],
            call: Callable[[int], bool],
            done: str,
            why: str,
        ) -> None:
            changed = skipped = 0
            for job_id in queryset.values_list("id", flat=True):
                if call(job_id):
                    changed += 1
                else:
                    skipped += 1
            text = f"{done} {changed} job{'s' if changed != 1 else ''}"
            if skipped:
                text += f"; {skipped} left as {'they were' if skipped != 1 else 'it was'} ({why})"
            self.message_user(
                request, text + ".", messages.SUCCESS if changed else messages.WARNING
            )

        @admin.action(description="Retry the selected jobs now", permissions=["operate"])
        def retry_jobs(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
            def retry(job_id: int) -> bool:
                record = jobs.retry(job_id)
                return record is not None and record.state == "available"

            self._act(
                request,
                queryset,
                retry,
                "Retried",
                "gone, or another job holds its unique key",
            )

        @admin.action(description="Cancel the selected jobs", permissions=["operate"])
        def cancel_jobs(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
            def cancel(job_id: int) -> bool:
                before = jobs.get(job_id)
                record = jobs.cancel(job_id)
                return (
                    record is not None
                    and record.state == "cancelled"
                    and before is not None
                    and before.state != "cancelled"
                )

            self._act(request, queryset, cancel, "Cancelled", "already finished")

        @admin.action(description="Delete the selected jobs", permissions=["operate"])
        def delete_jobs(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
            self._act(request, queryset, jobs.delete, "Deleted", "already gone")
