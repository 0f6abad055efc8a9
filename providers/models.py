"""A stored model provider: its kind, server and key (encrypted at rest, never returned)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from core import crypto


class Provider(models.Model):
    class Kind(models.TextChoices):
        OPENAI = "openai", "OpenAI"
        ANTHROPIC = "anthropic", "Anthropic"
        OLLAMA = "ollama", "Ollama"
        OPENAI_COMPATIBLE = "openai_compatible", "OpenAI-compatible"
        LOCAL = "local", "Local model (bundled, offline)"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="providers")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=32, choices=Kind.choices)
    api_base = models.URLField(max_length=500, blank=True)
    api_key_encrypted = models.TextField(blank=True, editable=False)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "workflows_provider"  # the table it had when it lived in the workflows app
        ordering = ["name", "id"]

    def __str__(self):
        return f"{self.name} ({self.kind})"

    @property
    def api_key(self) -> str:
        return crypto.decrypt(self.api_key_encrypted)

    @api_key.setter
    def api_key(self, value: str) -> None:
        self.api_key_encrypted = crypto.encrypt(value or "")

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key_encrypted)
