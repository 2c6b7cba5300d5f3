"""The test suite's sample app."""

from __future__ import annotations

from django.apps import AppConfig


class SampleAppConfig(AppConfig):
    name = "tests.sampleapp"
    label = "sampleapp"
    default_auto_field = "django.db.models.BigAutoField"
