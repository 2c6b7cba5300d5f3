from django.apps import AppConfig


class SignupsConfig(AppConfig):
    name = "signups"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from testproject.telemetry import setup_tracing

        setup_tracing()
