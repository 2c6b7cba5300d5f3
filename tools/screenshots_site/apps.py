from django.apps import AppConfig


class ScreenshotsSiteConfig(AppConfig):
    name = "tools.screenshots_site"
    label = "screenshots_site"
