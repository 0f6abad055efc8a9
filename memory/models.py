"""Memory stores (docs/memory.md#what-is-stored).

A ``History`` is one list of messages, identified by workflow + kind (global / node / named) +
name + key (``memory.keys.history_key``). Its messages carry their token counts, one per tokenizer,
each counted once. A ``Summary`` is one summarizing memory node's running summary of a history, with
the sequence number of the last message it covers. Nothing here is ever deleted by a strategy.
"""

from __future__ import annotations

from django.db import models


class History(models.Model):
    class Kind(models.TextChoices):
        GLOBAL = "global"
        NODE = "node"
        NAMED = "named"

    workflow = models.ForeignKey("workflows.Workflow", on_delete=models.CASCADE, related_name="histories")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    name = models.CharField(max_length=100, blank=True)
    key = models.CharField(max_length=64)
    # Sequence numbers are allocated under a row lock on the history.
    last_seq = models.PositiveIntegerField(default=0)
    # Messages with seq <= this were replaced (set_history / PUT) and are no longer part of it.
    replaced_through = models.PositiveIntegerField(default=0)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workflow", "kind", "name", "key"], name="unique_history")]
        verbose_name_plural = "histories"

    def __str__(self):
        label = self.name or self.kind
        return f"{label} @ {self.key}"


class HistoryMessage(models.Model):
    history = models.ForeignKey(History, on_delete=models.CASCADE, related_name="messages")
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=16)
    content = models.TextField()
    # A tool round (memory/tool_rounds.py): an assistant message's calls, in OpenAI's shape
    # ([{id, type: "function", function: {name, arguments}}]), and the call a "tool" message answers.
    tool_calls = models.JSONField(null=True, blank=True)
    tool_call_id = models.CharField(max_length=100, blank=True)
    # Token counts by tokenizer name ({"o200k": 12, "gguf:SmolLM2-...": 14}): each counted once, when
    # the message is written or first read by a model with that tokenizer (memory/tokens.py).
    token_counts = models.JSONField(default=dict)
    run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    node = models.CharField(max_length=100, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["history", "seq"]
        constraints = [models.UniqueConstraint(fields=["history", "seq"], name="unique_history_seq")]

    def __str__(self):
        return f"{self.role}: {self.content[:40]}"


class Summary(models.Model):
    history = models.ForeignKey(History, on_delete=models.CASCADE, related_name="summaries")
    memory_node = models.CharField(max_length=100)
    text = models.TextField(blank=True)
    covers_through = models.PositiveIntegerField(default=0)
    token_count = models.PositiveIntegerField(default=0)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["history", "memory_node"], name="unique_summary")]
        verbose_name_plural = "summaries"

    def __str__(self):
        return f"summary of {self.history} by {self.memory_node} through {self.covers_through}"


class Summarization(models.Model):
    """One summarizer call: what it covered, what it cost, and whether it worked."""

    class Status(models.TextChoices):
        OK = "ok"
        FAILED = "failed"

    history = models.ForeignKey(History, on_delete=models.CASCADE, related_name="summarizations")
    memory_node = models.CharField(max_length=100)
    run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="summarizations")
    status = models.CharField(max_length=16, choices=Status.choices)
    model = models.CharField(max_length=200)
    from_seq = models.PositiveIntegerField()
    through_seq = models.PositiveIntegerField()
    message_count = models.PositiveIntegerField()
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    duration_ms = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    # Exactly the request sent to the summarizer ({role, content} each).
    messages = models.JSONField(default=list, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self):
        return f"{self.status}: {self.from_seq}-{self.through_seq}"


class Fact(models.Model):
    """One fact a ``memory.facts`` node keeps about the participant (docs/participants.md#memoryfacts): ``name`` is the
    fact's key ("city"), ``value`` what it is ("Porto"), with the message it came from. A changed
    value supersedes the old fact, which stays (``superseded`` set), no longer sent to a model.

    Keyed like a history (``key``: ``participant:<id>``, or ``thread:<id>`` / ``run:<id>``), per
    workflow; ``participant`` is set for participant-keyed facts (the participant page, deletion)."""

    class Source(models.TextChoices):
        EXTRACTED = "extracted"  # by the extraction step after a turn
        OWNER = "owner"  # added or edited by the workflow's owner

    workflow = models.ForeignKey("workflows.Workflow", on_delete=models.CASCADE, related_name="facts")
    key = models.CharField(max_length=64)
    participant = models.ForeignKey("participants.Participant", null=True, blank=True, on_delete=models.CASCADE, related_name="facts")
    name = models.CharField(max_length=100)
    value = models.TextField()
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.EXTRACTED)
    # The participant's message the fact was taken from (empty for an owner's fact), and its run.
    source_message = models.TextField(blank=True)
    run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    superseded = models.DateTimeField(null=True, blank=True)
    superseded_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["created", "id"]
        indexes = [models.Index(fields=["workflow", "key", "superseded"], name="fact_current")]
        constraints = [
            models.UniqueConstraint(
                fields=["workflow", "key", "name"], condition=models.Q(superseded__isnull=True), name="one_current_fact_per_name"
            ),
        ]

    def __str__(self):
        return f"{self.name}: {self.value[:40]}"


class FactExtraction(models.Model):
    """One extraction call after a turn: what it was sent (exactly), what it changed, and whether
    it worked. The facts' counterpart of ``Summarization``."""

    class Status(models.TextChoices):
        OK = "ok"
        FAILED = "failed"

    workflow = models.ForeignKey("workflows.Workflow", on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=64)
    participant = models.ForeignKey("participants.Participant", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    memory_node = models.CharField(max_length=100)
    run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.CASCADE, related_name="fact_extractions")
    status = models.CharField(max_length=16, choices=Status.choices)
    model = models.CharField(max_length=200)
    added = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    duration_ms = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    # Exactly the request sent to the extracting model ({role, content} each), and its answer.
    messages = models.JSONField(default=list, blank=True)
    reply = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self):
        return f"{self.status}: +{self.added} ~{self.updated}"
