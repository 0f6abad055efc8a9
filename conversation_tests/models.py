"""Conversation tests (docs/conversation-tests.md#conversation-tests).

A ``ConversationTest`` is a named script of turns, ``[{message, expect: [check...], reference?}]``,
stored as written. A ``TestRun`` executes some of a workflow's tests against one version; each
test becomes a ``TestResult`` with its own fresh thread and, turn by turn, the reply and every
check's verdict. Results keep the test's name and script as they ran, so deleting or editing a
test never rewrites history.
"""

from __future__ import annotations

from django.db import models


class Status(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"


class Progress(models.Model):
    """What a test run and each of its tests record alike: a status, what it cost, when it ran."""

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    @property
    def is_done(self) -> bool:
        return self.status in (Status.PASSED, Status.FAILED, Status.ERROR)

    @property
    def duration_ms(self) -> int | None:
        if self.started and self.finished:
            return int((self.finished - self.started).total_seconds() * 1000)
        return None


class ConversationTest(models.Model):
    workflow = models.ForeignKey("workflows.Workflow", on_delete=models.CASCADE, related_name="conversation_tests")
    name = models.CharField(max_length=200)
    turns = models.JSONField(default=list)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self):
        return self.name


class TestSettings(models.Model):
    """A workflow's test settings: whether publishing first runs its tests and needs them to pass."""

    __test__ = False  # not a pytest test class

    workflow = models.OneToOneField("workflows.Workflow", on_delete=models.CASCADE, primary_key=True, related_name="test_settings")
    publish_requires_passing = models.BooleanField(default=False)

    class Meta:
        verbose_name_plural = "test settings"


class TestRun(Progress):
    __test__ = False  # not a pytest test class

    Status = Status

    class Purpose(models.TextChoices):
        API = "api"
        PUBLISH = "publish"
        CLI = "cli"

    workflow = models.ForeignKey("workflows.Workflow", on_delete=models.CASCADE, related_name="test_runs")
    # The snapshot that ran (a published version, or the draft's snapshot of one revision). Its
    # number or draft revision is kept apart, so the label survives the version.
    version = models.ForeignKey("workflows.WorkflowVersion", null=True, on_delete=models.SET_NULL, related_name="+")
    version_number = models.PositiveIntegerField(null=True, blank=True)
    draft_revision = models.PositiveIntegerField(null=True, blank=True)
    purpose = models.CharField(max_length=16, choices=Purpose.choices, default=Purpose.API)
    error = models.TextField(blank=True)
    passed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    created = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self):
        return f"test run {self.pk} ({self.status})"

    @property
    def version_label(self) -> int | str:
        return self.version_number if self.version_number is not None else "draft"


class TestResult(Progress):
    __test__ = False  # not a pytest test class

    Status = Status

    test_run = models.ForeignKey(TestRun, on_delete=models.CASCADE, related_name="results")
    test = models.ForeignKey(ConversationTest, null=True, on_delete=models.SET_NULL, related_name="results")
    position = models.PositiveIntegerField()
    name = models.CharField(max_length=200)
    script = models.JSONField(default=list)  # the test's turns as they ran
    thread = models.ForeignKey("runs.Thread", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    error = models.TextField(blank=True)
    # One entry per executed turn: {message, reply, run, status, error, checks: [{check, passed, status, detail, ...}]}
    turns = models.JSONField(default=list)
    attempts = models.PositiveIntegerField(default=0)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["test_run", "position"]
        constraints = [models.UniqueConstraint(fields=["test_run", "position"], name="one_result_per_position")]

    def __str__(self):
        return f"{self.name} ({self.status})"
