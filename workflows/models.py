"""A workflow (its draft graph, widget and limit settings) and its immutable versions."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q


def new_public_key() -> str:
    """A widget's public key (issue 4): public by design, but not guessable."""
    return "wk_" + secrets.token_urlsafe(24)


class Workflow(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="workflows")
    name = models.CharField(max_length=200)
    graph = models.JSONField(default=dict)
    revision = models.PositiveIntegerField(default=1)
    published_version = models.ForeignKey("WorkflowVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # --- embeddable widget (issue 4; services in widget/services.py) ---------------------------
    # The public key is usable once the workflow is published; the widget runs the published version.
    public_key = models.CharField(max_length=64, unique=True, default=new_public_key, editable=False)
    allowed_origins = models.JSONField(default=list, blank=True)  # empty: any site may embed the widget
    # The secret an embedding site signs its logged-in user's id with (data-participant-signature,
    # participants/services.py); made on first use, shown in the Share panel.
    identity_secret_encrypted = models.TextField(blank=True, editable=False)
    widget_theme = models.JSONField(default=dict, blank=True)  # title, welcome, starters, colours
    # --- end widget -----------------------------------------------------------------------------
    # Daily spend limits (runs/limits.py): {"workflow"|"visitor"|"caller": {"tokens", "cost"}}.
    spend_limits = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated", "-id"]

    def __str__(self):
        return self.name


class WorkflowVersion(models.Model):
    """An immutable snapshot of a workflow's graph. Runs execute a version, never the live draft.

    Published versions are numbered; the test chat runs a draft snapshot, one per draft revision.
    """

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField(null=True, blank=True)
    draft_revision = models.PositiveIntegerField(null=True, blank=True)
    graph = models.JSONField()
    # Who published it (numbered versions); kept when the account is gone as "nobody".
    published_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["workflow", "number"], name="unique_version_number"),
            models.UniqueConstraint(fields=["workflow", "draft_revision"], name="unique_draft_snapshot"),
            models.CheckConstraint(
                condition=Q(number__isnull=False) | Q(draft_revision__isnull=False), name="version_is_numbered_or_draft"
            ),
        ]

    def __str__(self):
        return f"{self.workflow} v{self.number}" if self.number else f"{self.workflow} draft r{self.draft_revision}"

    @property
    def is_draft(self) -> bool:
        return self.number is None
