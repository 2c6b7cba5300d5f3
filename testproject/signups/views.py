from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import get_token
from django.utils.html import escape
from django.views.decorators.http import require_http_methods

from .services import register

FORM = """<!doctype html><title>Sign up</title>
<form method="post"><input type="hidden" name="csrfmiddlewaretoken" value="{token}">
<input type="email" name="email" required> <button>Sign up</button></form>"""


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return HttpResponse(FORM.format(token=escape(get_token(request))))
    email = request.POST.get("email", "").strip()
    try:
        validate_email(email)
    except ValidationError:
        return JsonResponse({"error": "enter a valid email address"}, status=400)
    try:
        signup, job_id = register(email, request=request)
    except IntegrityError:
        return JsonResponse({"error": "this address has already signed up"}, status=409)
    return JsonResponse({"signup": signup.pk, "welcome_job": job_id}, status=201)
