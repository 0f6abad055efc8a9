"""A secret an owner stores for tools (an API key a ``tool.http`` header sends, an MCP server's
Authorization header): encrypted at rest, never returned, never logged, never sent to a model."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from core import crypto


class Secret(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="secrets")
    name = models.CharField(max_length=100)
    value_encrypted = models.TextField(editable=False)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="unique_secret_name_per_owner")]

    def __str__(self):
        return self.name

    @property
    def value(self) -> str:
        return crypto.decrypt(self.value_encrypted)

    @value.setter
    def value(self, value: str) -> None:
        self.value_encrypted = crypto.encrypt(value)
