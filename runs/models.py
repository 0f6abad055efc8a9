"""Conversations (``Thread`` and its never-trimmed transcript of ``Message`` rows) and turns (``Run``
and its ``RunStep`` trace)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class Thread(models.Model):
    """A conversation. Its transcript (``messages``) is never trimmed."""

    workflow = models.ForeignKey("workflows.Workflow", on_delete=models.CASCADE, related_name="threads")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="threads")
    title = models.CharField(max_length=200, blank=True)
    # Sequence numbers order the transcript; the counter is advanced under a row lock.
    last_seq = models.PositiveIntegerField(default=0)
    # --- widget (issue 4): a widget visitor's thread is found by this unguessable token, never by id.
    widget_token = models.CharField(max_length=64, unique=True, null=True, blank=True, editable=False)
    # A webhook caller names a conversation by its own key ("thread": "customer-42").
    external_id = models.CharField(max_length=200, null=True, blank=True)
    # Who talks on this thread (a thread has one participant at most; their memory follows them).
    participant = models.ForeignKey("participants.Participant", null=True, blank=True, on_delete=models.SET_NULL, related_name="threads")
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "workflows_thread"  # the table it had when it lived in the workflows app
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
        db_table = "workflows_message"  # the table it had when it lived in the workflows app
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

    workflow = models.ForeignKey("workflows.Workflow", on_delete=models.CASCADE, related_name="runs")
    # RESTRICT, not PROTECT: a version that runs used cannot be deleted on its own, but deleting its
    # workflow (or the owner's account) deletes the runs with it.
    version = models.ForeignKey("workflows.WorkflowVersion", on_delete=models.RESTRICT, related_name="runs")
    thread = models.ForeignKey(Thread, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    participant = models.ForeignKey("participants.Participant", null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
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
    # Who spends (runs/limits.py): "visitor:<address>" (widget), "caller:<user>" (/v1), or "".
    spender = models.CharField(max_length=240, blank=True)
    # The caller's W3C ``traceparent`` (webhooks, /v1): the run's trace continues it.
    trace_context = models.CharField(max_length=128, blank=True)
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "workflows_run"  # the table it had when it lived in the workflows app
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
    # Exactly the messages this step's model call was sent ({role, content} each, and OpenAI's
    # tool_calls / tool_call_id on tool rounds), or None for a node that called no model. Stored as
    # sent, never reconstructed. A node that called tools made several calls: ``messages`` is the
    # first's, ``rounds`` each one's ({messages, tools, tool_choice, tool_calls: [...]}).
    messages = models.JSONField(null=True, blank=True)
    rounds = models.JSONField(null=True, blank=True)
    started = models.DateTimeField(auto_now_add=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        db_table = "workflows_runstep"  # the table it had when it lived in the workflows app
        ordering = ["run", "position"]
        constraints = [models.UniqueConstraint(fields=["run", "node"], name="one_step_per_node")]

    def __str__(self):
        return f"{self.node} ({self.status})"
