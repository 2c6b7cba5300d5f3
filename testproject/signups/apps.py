from django.apps import AppConfig


class SignupsConfig(AppConfig):
    name = "signups"
    default_auto_field = "django.db.models.BigAutoField"
