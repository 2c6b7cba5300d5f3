"""The dashboard's bulk actions: from the jobs page's current filters, a confirmation page
that counts the matching jobs ("Retry all 523 matching jobs?"), then a POST that acts on
every one of them in batches and goes back to the jobs page with a notice saying how many
changed (post/redirect/get, through Django's messages framework when it runs).

GET ``bulk/<action>?<filters>`` shows the confirmation; POST ``bulk/<action>`` (the filters
as form fields, under CSRF protection) acts. Bad filters are a 400 page naming the field; an
unknown action is a 404 page. Parsing, counting and acting are `operations.bulk`'s.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from anole_jobs.dashboard.pages import confirm_page, dashboard_view
from anole_jobs.dashboard.render import messages_on, render
from anole_jobs.operations import bulk
from anole_jobs.operations.bulk import LABELS, RULES
from anole_jobs.operations.problems import BadInput, NotFound

#: Form fields of the page, not filters.
PAGE_FIELDS = ("csrfmiddlewaretoken", "notice")


def _action(text: str) -> bulk.BulkAction:
    try:
        return bulk.parse_action(text)
    except BadInput:
        raise NotFound(
            f"no bulk action {text!r}; the actions are retry, cancel and delete"
        ) from None


@require_http_methods(["GET", "HEAD", "POST"])
@dashboard_view
def bulk_action(request: HttpRequest, action: str) -> HttpResponse:
    chosen = _action(action)
    source = request.POST if request.method == "POST" else request.GET
    listing = bulk.parse_bulk_listing(
        dict(source.lists()), blank_is_absent=True, ignore=PAGE_FIELDS
    )
    filters = listing.filters()
    back = reverse("anole_jobs:dashboard:jobs") + "?" + urlencode(filters)
    if request.method != "POST":
        preview = bulk.preview(listing)
        return render(
            request,
            "bulk.html",
            {
                "title": f"{LABELS[chosen]} matching jobs",
                "section": "jobs",
                "action": chosen,
                "label": LABELS[chosen],
                "rule": RULES[chosen],
                "count": preview.count,
                "exact": preview.exact,
                "filters": filters,
                "back": back,
            },
        )
    outcome = bulk.act(chosen, listing)
    verb = bulk.PAST_TENSE[chosen]
    text = f"{outcome.done} of {outcome.matched} matching jobs {verb}."
    if messages_on(request):
        level = messages.SUCCESS if outcome.done else messages.WARNING
        messages.add_message(request, level, text)
        return HttpResponseRedirect(back)
    notice = f"bulk_{verb}" if outcome.done else "unchanged"
    return HttpResponseRedirect(back + ("&" if filters else "") + urlencode({"notice": notice}))


def _back(text: str) -> str:
    """The jobs list to go back to: its query string only (never another site)."""
    jobs_url = reverse("anole_jobs:dashboard:jobs")
    return jobs_url + text if text.startswith("?") and "\\" not in text else jobs_url


@require_http_methods(["GET", "HEAD", "POST"])
@dashboard_view
def chosen_action(request: HttpRequest) -> HttpResponse:
    """The jobs list's selection: GET ``chosen?action=retry&id=1&id=2`` asks (the list's
    form, no script needed), POST acts on those jobs and goes back to the list."""
    source = request.POST if request.method == "POST" else request.GET
    chosen = _action(source.get("action", ""))
    ids = bulk.parse_chosen(source.getlist("id"))
    back = _back(source.get("back", ""))
    if request.method != "POST":
        shown = ", ".join(str(job_id) for job_id in ids[:20])
        if len(ids) > 20:
            shown += f" and {len(ids) - 20} more"
        return confirm_page(
            request,
            question=f"{LABELS[chosen]} {len(ids)} chosen job{'s' if len(ids) != 1 else ''}?",
            explanation=[f"Jobs {shown}.", RULES[chosen]],
            button=f"{LABELS[chosen]} {len(ids)} chosen",
            danger=chosen != "retry",
            back=back,
            back_label="Back to the jobs",
            section="jobs",
            fields=[
                ("action", chosen),
                ("back", source.get("back", "")),
                *(("id", str(job_id)) for job_id in ids),
            ],
        )
    outcome = bulk.act_on_chosen(chosen, ids)
    text = f"{outcome.done} of {outcome.matched} chosen jobs {bulk.PAST_TENSE[chosen]}."
    if messages_on(request):
        messages.add_message(request, messages.SUCCESS if outcome.done else messages.WARNING, text)
        return HttpResponseRedirect(back)
    notice = f"bulk_{bulk.PAST_TENSE[chosen]}" if outcome.done else "unchanged"
    return HttpResponseRedirect(
        back + ("&" if "?" in back else "?") + urlencode({"notice": notice})
    )
