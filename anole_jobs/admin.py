"""The jobs table in the Django admin, for the database store (docs/admin.md).

Registered only when ``django.contrib.admin`` is installed (this module imports nothing of it
otherwise, so importing it never fails). The rows are read-only: every change goes through
`anole_jobs.operations.actions` — retry, cancel and delete, fenced like every admin write,
never raw updates — which says how many jobs each action changed. The page shows only while
the configured store is a database one (the memory and Redis stores have no table); it reads
the store's own database alias.

What went wrong is a page with the message and the status `operations.problems` gives it
(a database that does not answer: 503 with ``Retry-After``), never a server error.

Who may see it: ``ANOLE_JOBS["ADMIN_PERMISSION"]`` (default: active staff, as for the JSON
routes), or Django's own view/change permissions on the model.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from datetime import UTC
from typing import TYPE_CHECKING, Any

from django.apps import apps

from anole_jobs import conf, encryption, offload

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


def first_line(text: object) -> str:
    """The first line of `text` that holds something (a message may be a whole traceback)."""
    for line in str(text).splitlines():
        if line.strip():
            return " ".join(line.split())
    return ""


def error_summary(error: Mapping[str, Any], width: int = 48) -> tuple[str, str]:
    """An error entry as one short line, ``ValueError: failed on attempt 3``, and the whole
    first line of it (for the cell's tooltip)."""
    kind = str(error.get("type", "") or "error")
    line = first_line(error.get("message", ""))
    whole = f"{kind}: {line}" if line else kind
    return shorten(whole, width), whole


if apps.is_installed("django.contrib.admin"):
    from django import forms
    from django.contrib import admin, messages
    from django.contrib.admin import helpers
    from django.http import HttpResponse
    from django.template.response import TemplateResponse
    from django.utils.html import format_html, format_html_join

    from anole_jobs.api import jobs
    from anole_jobs.bounds import name_problem
    from anole_jobs.core import MAX_JOB_ID, STATES
    from anole_jobs.operations import actions as job_actions
    from anole_jobs.operations.bulk import LABELS as BULK_LABELS
    from anole_jobs.operations.bulk import PAST_TENSE
    from anole_jobs.operations.bulk import RULES as BULK_RULES
    from anole_jobs.stores.search import BULK_BATCH_MAX, BulkAction

    #: The confirmation page's field that says "yes, act on all of them".
    CONFIRM_FIELD = "confirm_all_matching"
    #: The list's filters that hold a queue or kind name (checked by the rule for names).
    NAME_FILTERS = ("queue", "queue__exact", "kind", "kind__exact")
    from anole_jobs.operations import audit
    from anole_jobs.operations.display import display_kind
    from anole_jobs.operations.ids import job_id_or_none
    from anole_jobs.operations.permissions import may, permitted, refusal
    from anole_jobs.operations.problems import (
        EXPECTED,
        NotFound,
        Problem,
        problem_of,
    )
    from anole_jobs.stores.database.models import Job as JobRow

    def problem_page(problem: Problem) -> HttpResponse:
        """What went wrong, as a page with the problem's status (and ``Retry-After``)."""
        response = HttpResponse(
            format_html(
                "<!doctype html><title>{} · Jobs</title><h1>{}</h1><p>{}</p>"
                '<p><a href="">Try again</a></p>',
                problem.status,
                "The jobs store did not answer" if problem.status == 503 else "Cannot do that",
                problem.message,
            ),
            status=problem.status,
            content_type="text/html; charset=utf-8",
        )
        for name, value in problem.headers.items():
            response[name] = value
        return response

    def shown(view: Callable[[], HttpResponse]) -> HttpResponse:
        """`view`'s page rendered now (so a failing read happens here), or the problem's."""
        try:
            response = view()
            render = getattr(response, "render", None)
            if render is not None and not getattr(response, "is_rendered", True):
                render()
            return response
        except EXPECTED as exc:
            problem = problem_of(exc)
            if problem is None:
                raise
            return problem_page(problem)

    def _answering_problems(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def answering(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            return shown(lambda: view(request, *args, **kwargs))

        return answering

    class ListStyle:
        """The job list's few rules, as an inline ``<style>`` in the page's media: the table
        fits beside the admin's side bars at 1,280 px (kinds and times wrap where they may,
        the error cell holds at most two lines), so no row is a traceback tall."""

        CSS = (
            "#result_list td.field-kind_shown{overflow-wrap:anywhere;min-width:6rem}"
            "#result_list td.field-queue{white-space:nowrap}"
            "#result_list td.field-when{min-width:5.5rem}"
            "#result_list td.field-last_error{min-width:8rem;max-width:16rem}"
            "#result_list td.field-last_error span{display:-webkit-box;-webkit-box-orient:"
            "vertical;-webkit-line-clamp:2;line-clamp:2;overflow:hidden;overflow-wrap:anywhere}"
        )

        def __html__(self) -> str:
            return f"<style>{self.CSS}</style>"

    LIST_STYLE = ListStyle()

    def _pretty(value: Any) -> str:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)

    @admin.register(JobRow)
    class JobAdmin(admin.ModelAdmin):
        # Six narrow columns, so the table fits beside the admin's side bars at 1,280 px: a
        # job's state with its attempts, one time (finished, else due), one line of error.
        list_display = ("id", "kind_shown", "queue", "state_shown", "when", "last_error")
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
            "result_json",
            "errors_display",
        )
        readonly_fields = tuple(
            name for row in fields for name in ((row,) if isinstance(row, str) else row)
        )

        @property
        def media(self) -> forms.Media:
            # Django renders a media entry with __html__ as it is (not as a <link>).
            return super().media + forms.Media(css={"all": [LIST_STYLE]})  # type: ignore[list-item]

        # -- who may see and act ------------------------------------------------------------
        def _permitted(self, request: HttpRequest) -> bool:
            return permitted(request)

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
            allowed = self._permitted(request) and may(request, "change")
            return allowed or super().has_change_permission(request)

        def has_remove_permission(self, request: HttpRequest) -> bool:
            """May delete jobs and act on every matching job: the delete permission, as on
            the JSON routes and the dashboard."""
            if store_alias() is None:
                return False
            allowed = self._permitted(request) and may(request, "delete")
            return allowed or super().has_delete_permission(request)

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
            job_id = job_id_or_none(term)
            if job_id is not None:
                return queryset.filter(id=job_id) | queryset.filter(kind__icontains=term), False
            return super().get_search_results(request, queryset, search_term)

        # -- pages: what went wrong is a page, never a server error -----------------------
        def get_urls(self) -> list[Any]:
            """Django's pages for the model, each answering what went wrong as a page: the
            admin site checks who asks (reading the session and the user) before our views
            run, and when that database does not answer, the page says so (503)."""
            patterns = super().get_urls()
            for pattern in patterns:
                pattern.callback = _answering_problems(pattern.callback)
            return patterns

        def changelist_view(
            self, request: HttpRequest, extra_context: dict[str, Any] | None = None
        ) -> HttpResponse:
            parent = super().changelist_view
            for name, values in request.GET.lists():
                if any("\x00" in value for value in values):
                    # PostgreSQL refuses a NUL in text outright (a DataError, not a miss).
                    message = f"{name}: no job holds a NUL character"
                    return problem_page(Problem(status=400, code="bad_request", message=message))
                if name in NAME_FILTERS:
                    for value in values:
                        problem = name_problem(value, what=name)
                        if problem is not None:
                            return problem_page(
                                Problem(status=400, code="bad_filter", message=problem)
                            )
            return shown(lambda: parent(request, extra_context))

        def response_action(
            self, request: HttpRequest, queryset: QuerySet[Any], *args: Any, **kwargs: Any
        ) -> HttpResponse | None:
            """Django's actions filter the rows by the ids the form sent: one that is not a
            job id (a tampered form: text, a NUL, beyond 2**63) would fail in the database.
            Such a form is refused with a message, and the list shown again."""
            selected = request.POST.getlist(helpers.ACTION_CHECKBOX_NAME)
            bad = next((value for value in selected if job_id_or_none(value) is None), None)
            if bad is not None:
                shown_value = bad if len(bad) <= 30 else bad[:30] + "…"
                self.message_user(
                    request,
                    f"Nothing done: {shown_value!r} is not a job id "
                    f"(ids are whole numbers from 1 to {MAX_JOB_ID}).",
                    messages.ERROR,
                )
                return None  # Django then redirects back to the list
            with audit.acting(audit.actor_of(request), "admin"):
                return super().response_action(request, queryset, *args, **kwargs)

        def changeform_view(
            self,
            request: HttpRequest,
            object_id: str | None = None,
            form_url: str = "",
            extra_context: dict[str, Any] | None = None,
        ) -> HttpResponse:
            parent = super().changeform_view
            return shown(lambda: parent(request, object_id, form_url, extra_context))

        def history_view(
            self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
        ) -> HttpResponse:
            parent = super().history_view
            return shown(lambda: parent(request, object_id, extra_context))

        # -- columns and fields ---------------------------------------------------------------
        @admin.display(description="kind", ordering="kind")
        def kind_shown(self, job: JobRow) -> str:
            """The kind as people read it (a ``django.tasks`` job's with its task)."""
            return display_kind(job.kind, job.args)

        @admin.display(description="state", ordering="state")
        def state_shown(self, job: JobRow) -> str:
            return f"{job.state} · {job.attempt}/{job.max_attempts}"

        @admin.display(description="when (UTC)", ordering="scheduled_at")
        def when(self, job: JobRow) -> str:
            """When it finished, else when it is due."""
            moment = job.finished_at or job.scheduled_at
            return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if moment else ""

        @admin.display(description="last error")
        def last_error(self, job: JobRow) -> str:
            """The last error's type and the start of its message's first line: a message
            may hold a whole traceback, which belongs on the job's own page."""
            if not job.errors:
                return ""
            short, whole = error_summary(job.errors[-1])
            return format_html('<span title="{}">{}</span>', whole, short)

        @admin.display(description="args")
        def args_json(self, job: JobRow) -> str:
            return format_html("<pre>{}</pre>", _pretty(_as_stored_inline(job.args)))

        @admin.display(description="meta")
        def meta_json(self, job: JobRow) -> str:
            return format_html("<pre>{}</pre>", _pretty(job.meta))

        @admin.display(description="result")
        def result_json(self, job: JobRow) -> str:
            if job.state != "completed":
                return "none yet" if job.state not in ("dead", "cancelled") else "none"
            if job.result is None:
                return "none (the handler returned None)"
            return format_html("<pre>{}</pre>", _pretty(_as_stored_inline(job.result)))

        @admin.display(description="errors")
        def errors_display(self, job: JobRow) -> str:
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

        # -- actions: through the operations layer (fenced) -------------------------------
        def _act(
            self,
            request: HttpRequest,
            queryset: QuerySet[Any],
            call: Callable[[int], job_actions.Outcome[Any]],
            done: str,
            why: str,
        ) -> HttpResponse | None:
            changed = skipped = 0
            for job_id in queryset.values_list("id", flat=True):
                try:
                    outcome = call(job_id)
                except NotFound:
                    skipped += 1
                    continue
                if outcome.changed:
                    changed += 1
                else:
                    skipped += 1
            text = f"{done} {changed} job{'s' if changed != 1 else ''}"
            if skipped:
                text += f"; {skipped} left as {'they were' if skipped != 1 else 'it was'} ({why})"
            self.message_user(
                request, text + ".", messages.SUCCESS if changed else messages.WARNING
            )
            return None

        @admin.action(description="Retry the selected jobs now", permissions=["operate"])
        def retry_jobs(self, request: HttpRequest, queryset: QuerySet[Any]) -> HttpResponse | None:
            if selected_across(request):
                if not self.has_remove_permission(request):
                    return self._no_bulk(request)
                return self.act_on_all(request, queryset, "retry")
            return self._act(
                request,
                queryset,
                job_actions.retry,
                "Retried",
                "gone, already available, or another job holds its unique key",
            )

        @admin.action(description="Cancel the selected jobs", permissions=["operate"])
        def cancel_jobs(self, request: HttpRequest, queryset: QuerySet[Any]) -> HttpResponse | None:
            if selected_across(request):
                if not self.has_remove_permission(request):
                    return self._no_bulk(request)
                return self.act_on_all(request, queryset, "cancel")
            return self._act(request, queryset, job_actions.cancel, "Cancelled", "already finished")

        @admin.action(description="Delete the selected jobs", permissions=["remove"])
        def delete_jobs(self, request: HttpRequest, queryset: QuerySet[Any]) -> HttpResponse | None:
            if selected_across(request):
                return self.act_on_all(request, queryset, "delete")
            return self._act(request, queryset, job_actions.delete, "Deleted", "already gone")

        def _no_bulk(self, request: HttpRequest) -> HttpResponse | None:
            self.message_user(request, refusal("delete") + ".", messages.ERROR)
            return None  # Django then redirects back to the list

        # -- "all N matching": Django's select-across, acted on in batches ------------------
        def act_on_all(
            self, request: HttpRequest, queryset: QuerySet[Any], action: BulkAction
        ) -> HttpResponse | None:
            """Every job the changelist's filters match (Django's "Select all N"): a
            confirmation page with the count first, then batches of `BULK_BATCH_MAX` ids
            through the facade, which rechecks each job's state when the list is filtered
            by one (a job that moved meanwhile is left as it is)."""
            count = queryset.count()
            if request.POST.get(CONFIRM_FIELD) != "yes":
                return TemplateResponse(
                    request,
                    "anole_jobs/admin/bulk_confirmation.html",
                    {
                        **self.admin_site.each_context(request),
                        "title": f"{BULK_LABELS[action]} all matching jobs",
                        "opts": self.model._meta,
                        "label": BULK_LABELS[action],
                        "rule": BULK_RULES[action],
                        "count": count,
                        "action_name": f"{action}_jobs",
                        "confirm_field": CONFIRM_FIELD,
                        "selected": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
                    },
                )
            state = request.GET.get("state__exact")
            state = state if state in STATES else None
            done = matched = 0
            ids = queryset.order_by("-id").values_list("id", flat=True)
            batch: list[int] = []
            for job_id in ids.iterator(chunk_size=BULK_BATCH_MAX):
                batch.append(job_id)
                if len(batch) == BULK_BATCH_MAX:
                    done += jobs.act(action, batch, state=state)
                    matched, batch = matched + len(batch), []
            if batch:
                done += jobs.act(action, batch, state=state)
                matched += len(batch)
            audit.record(f"bulk_{action}", f"{matched} jobs matching a filter", f"{done} done")
            verb = PAST_TENSE[action]
            self.message_user(
                request,
                f"{done} of {matched} matching jobs {verb}.",
                messages.SUCCESS if done else messages.WARNING,
            )
            return None

    def selected_across(request: HttpRequest) -> bool:
        """Whether the action is for every job the list matches ("Select all N")."""
        return request.POST.get("select_across") == "1"


def _as_stored_inline(value: Any) -> Any:
    """A job's args or result as the admin shows them: an offloaded one read back
    (docs/offload.md), an encrypted one as ``{"encrypted": true}`` (docs/encryption.md)."""
    if offload.is_ref(value):
        try:
            value = offload.load(value)
        except Exception:  # noqa: BLE001 - a missing file must not break the page
            return {"offloaded": value[offload.REF].get("name"), "missing": True}
    return encryption.shown(value)
