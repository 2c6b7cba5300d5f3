"""URLs for the dashboard's browser test: the admin routes and a bare login page."""

from __future__ import annotations

from django.contrib.auth import login
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.middleware.csrf import get_token
from django.urls import include, path
from django.utils.html import escape
from django.utils.http import url_has_allowed_host_and_scheme

PAGE = """<!doctype html><html lang="en"><title>Log in</title>
<form method="post"><input type="hidden" name="csrfmiddlewaretoken" value="{token}">
<p>{errors}</p>
<label>Username <input name="username" autocomplete="username"></label>
<label>Password <input name="password" type="password" autocomplete="current-password"></label>
<button type="submit">Log in</button></form></html>"""


def login_view(request: HttpRequest) -> HttpResponse:
    form = AuthenticationForm(request, data=request.POST or None)
    if request.method == "POST" and form.is_valid():
        login(request, form.get_user())
        target = request.GET.get("next", "/")
        if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
            target = "/"
        return HttpResponseRedirect(target)
    errors = " ".join(escape(e) for e in form.non_field_errors())
    return HttpResponse(PAGE.format(token=escape(get_token(request)), errors=errors))


urlpatterns = [
    path("login/", login_view),
    path("ops/jobs/", include("anole_jobs.urls")),
]
