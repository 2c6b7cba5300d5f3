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

from anole_jobs.dashboard.pages import dashboard_view
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
