"""Memory stores (DESIGN.md §4).

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
    # Token counts by tokenizer name ({"o200k": 12, "gguf:SmolLM2-...": 14}): each counted once, when
    # the message is written or first read by a model with that tokenizer (memory/tokens.py).
    token_counts = models.JSONField(default=dict)
    run = models.ForeignKey("workflows.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
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
    run = models.ForeignKey("workflows.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="summarizations")
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
