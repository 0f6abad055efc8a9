from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q

from . import crypto


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


def new_webhook_token() -> str:
    return "wh_" + secrets.token_urlsafe(32)


def new_signing_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


def new_public_key() -> str:
    """A widget's public key (issue 4): public by design, but not guessable."""
    return "wk_" + secrets.token_urlsafe(24)


class Workflow(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="workflows")
    name = models.CharField(max_length=200)
    graph = models.JSONField(default=dict)
    revision = models.PositiveIntegerField(default=1)
    published_version = models.ForeignKey("WorkflowVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # --- embeddable widget (issue 4; services in workflows/widget.py) ---------------------------
    # The public key is usable once the workflow is published; the widget runs the published version.
    public_key = models.CharField(max_length=64, unique=True, default=new_public_key, editable=False)
    allowed_origins = models.JSONField(default=list, blank=True)  # empty: any site may embed the widget
    # The secret an embedding site signs its logged-in user's id with (data-participant-signature,
    # workflows/participants.py); made on first use, shown in the Share panel.
    identity_secret_encrypted = models.TextField(blank=True, editable=False)
    widget_theme = models.JSONField(default=dict, blank=True)  # title, welcome, starters, colours
    # --- end widget -----------------------------------------------------------------------------
    # Daily spend limits (workflows/limits.py): {"workflow"|"visitor"|"caller": {"tokens", "cost"}}.
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


class Participant(models.Model):
    """The person talking (DESIGN.md §4, key ``participant``), named by the caller: the chat API's
    and a webhook's ``participant``, the OpenAI endpoint's ``user``, a widget visitor (``visitor:``
    an anonymous id per browser, or the embedding site's signed id). Per workflow owner: memory
    keyed by participant is still scoped by workflow."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="participants")
    external_id = models.CharField(max_length=200)
    created = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-last_seen", "-id"]
        constraints = [models.UniqueConstraint(fields=["owner", "external_id"], name="unique_participant_per_owner")]

    def __str__(self):
        return self.external_id


class Thread(models.Model):
    """A conversation. Its transcript (``messages``) is never trimmed."""

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="threads")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="threads")
    title = models.CharField(max_length=200, blank=True)
    # Sequence numbers order the transcript; the counter is advanced under a row lock.
    last_seq = models.PositiveIntegerField(default=0)
    # --- widget (issue 4): a widget visitor's thread is found by this unguessable token, never by id.
    widget_token = models.CharField(max_length=64, unique=True, null=True, blank=True, editable=False)
    # A webhook caller names a conversation by its own key ("thread": "customer-42").
    external_id = models.CharField(max_length=200, null=True, blank=True)
    # Who talks on this thread (a thread has one participant at most; their memory follows them).
    participant = models.ForeignKey(Participant, null=True, blank=True, on_delete=models.SET_NULL, related_name="threads")
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["workflow", "external_id"], condition=Q(external_id__isnull=False), name="unique_external_thread"
            ),
        ]

    def __str__(self):
        return self.title or f"thread {self.pk}"


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="messages")
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField()
    run = models.ForeignKey("Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="messages")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["thread", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["thread", "seq"], name="unique_message_seq"),
            # A redelivered turn must not write its messages twice.
            models.UniqueConstraint(fields=["run", "role"], condition=Q(run__isnull=False), name="one_message_per_run_role"),
        ]

    def __str__(self):
        return f"{self.role}: {self.content[:40]}"


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    class Trigger(models.TextChoices):
        CHAT = "chat"
        WEBHOOK = "webhook"
        SCHEDULE = "schedule"
        MANUAL = "manual"

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="runs")
    # RESTRICT, not PROTECT: a version that runs used cannot be deleted on its own, but deleting its
    # workflow (or the owner's account) deletes the runs with it.
    version = models.ForeignKey(WorkflowVersion, on_delete=models.RESTRICT, related_name="runs")
    thread = models.ForeignKey(Thread, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    participant = models.ForeignKey(Participant, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    trigger = models.CharField(max_length=16, choices=Trigger.choices)
    trigger_node = models.CharField(max_length=100)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    input = models.TextField(blank=True)
    payload = models.JSONField(default=dict, blank=True)
    output = models.TextField(blank=True)
    error = models.TextField(blank=True)
    warnings = models.JSONField(default=list, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    # A webhook's Idempotency-Key, scoped to its trigger node: the same key on the same webhook
    # returns the first run and runs nothing twice.
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    # Who spends (workflows/limits.py): "visitor:<address>" (widget), "caller:<user>" (/v1), or "".
    spender = models.CharField(max_length=240, blank=True)
    # The caller's W3C ``traceparent`` (webhooks, /v1): the run's trace continues it.
    trace_context = models.CharField(max_length=128, blank=True)
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["thread", "status", "id"], name="run_thread_queue"),
            models.Index(fields=["workflow", "trigger_node", "status"], name="run_trigger_status"),
            models.Index(fields=["workflow", "created"], name="run_workflow_day"),
            models.Index(fields=["workflow", "spender", "created"], name="run_spender_day"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["workflow", "trigger_node", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="unique_idempotency_key_per_trigger",
            ),
        ]

    def __str__(self):
        return f"run {self.pk} ({self.status})"

    @property
    def is_done(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)

    @property
    def duration_ms(self) -> int | None:
        if self.started and self.finished:
            return int((self.finished - self.started).total_seconds() * 1000)
        return None


class RunStep(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steps")
    node = models.CharField(max_length=100)
    type = models.CharField(max_length=64)
    position = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    input = models.TextField(blank=True)
    output = models.TextField(blank=True)
    error = models.TextField(blank=True)
    details = models.JSONField(default=dict, blank=True)
    # Exactly the messages this step's model call was sent ({role, content} each), or None for a
    # node that called no model. Stored as sent, never reconstructed.
    messages = models.JSONField(null=True, blank=True)
    started = models.DateTimeField(auto_now_add=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["run", "position"]
        constraints = [models.UniqueConstraint(fields=["run", "node"], name="one_step_per_node")]

    def __str__(self):
        return f"{self.node} ({self.status})"


class Webhook(models.Model):
    """A published ``trigger.webhook`` node's secret URL (``/api/hooks/<token>/``) and signing secret."""

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="webhooks")
    node = models.CharField(max_length=100)
    token = models.CharField(max_length=64, unique=True, default=new_webhook_token)
    signing_secret_encrypted = models.TextField(editable=False)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
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
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    expires = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["webhook", "signature"], name="one_seen_signature")]
