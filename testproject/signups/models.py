from __future__ import annotations

from django.db import models


class Signup(models.Model):
    """Someone who signed up; `welcomed_at` is set once their welcome email went out."""

    email = models.EmailField(unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    welcomed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.email
