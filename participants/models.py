from __future__ import annotations

from django.conf import settings
from django.db import models


class Participant(models.Model):
    """The person talking (docs/memory.md, key ``participant``), named by the caller: the chat API's
    and a webhook's ``participant``, the OpenAI endpoint's ``user``, a widget visitor (``visitor:``
    an anonymous id per browser, or the embedding site's signed id). Per workflow owner: memory
    keyed by participant is still scoped by workflow."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="participants")
    external_id = models.CharField(max_length=200)
    created = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "workflows_participant"  # the table it had when it lived in the workflows app
        ordering = ["-last_seen", "-id"]
        constraints = [models.UniqueConstraint(fields=["owner", "external_id"], name="unique_participant_per_owner")]

    def __str__(self):
        return self.external_id
