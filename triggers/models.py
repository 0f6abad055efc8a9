"""A published webhook trigger's secret URL and signing secret, and the signed requests it has seen."""

from __future__ import annotations

import secrets

from django.db import models

from core import crypto


def new_webhook_token() -> str:
    return "wh_" + secrets.token_urlsafe(32)


def new_signing_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


class Webhook(models.Model):
    """A published ``trigger.webhook`` node's secret URL (``/api/hooks/<token>/``) and signing secret."""

    workflow = models.ForeignKey("workflows.Workflow", on_delete=models.CASCADE, related_name="webhooks")
    node = models.CharField(max_length=100)
    token = models.CharField(max_length=64, unique=True, default=new_webhook_token)
    signing_secret_encrypted = models.TextField(editable=False)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "workflows_webhook"  # the table it had when it lived in the workflows app
        constraints = [models.UniqueConstraint(fields=["workflow", "node"], name="one_webhook_per_node")]

    def __str__(self):
        return f"webhook {self.workflow_id}/{self.node}"

    @property
    def signing_secret(self) -> str:
        return crypto.decrypt(self.signing_secret_encrypted)

    @signing_secret.setter
    def signing_secret(self, value: str) -> None:
        self.signing_secret_encrypted = crypto.encrypt(value)


class SeenSignature(models.Model):
    """A signed webhook request already received, kept while its timestamp is still accepted: the
    same request again is a replay (its first run answers it). In the database, so a restart
    forgets nothing."""

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="seen_signatures")
    signature = models.CharField(max_length=100)
    run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    expires = models.DateTimeField(db_index=True)

    class Meta:
        db_table = "workflows_seensignature"  # the table it had when it lived in the workflows app
        constraints = [models.UniqueConstraint(fields=["webhook", "signature"], name="one_seen_signature")]
