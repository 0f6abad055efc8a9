"""Writes: tests, their settings, test runs; the publish gate. Executing a run is in ``execution``."""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from conversation_tests import selectors, tasks
from conversation_tests.checks import issue, normalized, script_issues
from conversation_tests.execution import dispatch
from conversation_tests.models import ConversationTest, TestResult, TestRun, TestSettings
from runs import selectors as workflow_selectors
from runs.models import Thread
from workflows import services as workflow_services
from workflows.models import Workflow, WorkflowVersion
from workflows.services import StaleRevision

logger = logging.getLogger("skein.tests")

GATE_POLL_S = 0.5


class ScriptInvalid(Exception):
    """A test (or a file of tests) that is not well formed: ``issues`` say where, by turn and check."""

    def __init__(self, issues: list[dict], message: str = "the test has errors"):
        super().__init__(message)
        self.issues = issues


class RunRefused(Exception):
    """A test run that cannot start (nothing to run, over a limit, no such version)."""

    def __init__(self, message: str, *, field: str = "tests", status: int = 400):
        super().__init__(message)
        self.field = field
        self.status = status


class GateFailed(Exception):
    """The publish gate: the draft's tests did not all pass, so nothing was published."""

    __test__ = False  # not a pytest test class

    def __init__(self, test_run: TestRun):
        counts = f"{test_run.failed} failed, {test_run.errors} could not be decided" if test_run.is_done else "they did not finish in time"
        super().__init__(f"not published: the tests must pass first ({counts}; test run {test_run.pk})")
        self.test_run = test_run


# --- tests -------------------------------------------------------------------------------------------
def _checked(name: str, turns) -> list[dict]:
    issues = script_issues(turns)
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        issues.insert(0, issue(None, None, "name", "a test needs a name of at most 200 characters"))
    if issues:
        raise ScriptInvalid(issues)
    return normalized(turns)


def conversation_test_create(*, workflow: Workflow, name: str, turns) -> ConversationTest:
    turns = _checked(name, turns)
    if ConversationTest.objects.filter(workflow=workflow).count() >= settings.SKEIN_TEST_MAX_TESTS:
        raise ScriptInvalid([issue(None, None, "tests", f"a workflow has at most {settings.SKEIN_TEST_MAX_TESTS} tests")])
    return ConversationTest.objects.create(workflow=workflow, name=name.strip(), turns=turns)


def conversation_test_delete(*, test: ConversationTest) -> None:
    test.delete()


def conversation_test_update(*, test: ConversationTest, name: str, turns) -> ConversationTest:
    test.turns = _checked(name, turns)
    test.name = name.strip()
    test.save(update_fields=["name", "turns", "updated"])
    return test


def conversation_test_from_thread(*, thread: Thread, name: str | None = None) -> ConversationTest:
    """A test whose turns are the thread's user messages, each with the reply given then as its reference."""
    messages = list(workflow_selectors.thread_messages(thread=thread))
    replies = {m.run_id: m.content for m in messages if m.role == "assistant" and m.run_id}
    turns = [
        {"message": m.content, "expect": [], **({"reference": replies[m.run_id]} if replies.get(m.run_id) else {})}
        for m in messages
        if m.role == "user" and m.content.strip()
    ]
    if not turns:
        raise ScriptInvalid([issue(None, None, "thread", "this thread has no messages yet")], "nothing to save")
    if len(turns) > settings.SKEIN_TEST_MAX_TURNS:
        raise ScriptInvalid(
            [
                issue(
                    None,
                    None,
                    "thread",
                    f"this thread has {len(turns)} messages; a test holds at most {settings.SKEIN_TEST_MAX_TURNS} turns",
                )
            ],
            "the thread is too long for one test",
        )
    default = f"From thread #{thread.pk}" + (f": {thread.title[:80]}" if thread.title else "")
    return conversation_test_create(workflow=thread.workflow, name=(name or "").strip() or default, turns=turns)


def conversation_tests_import(*, workflow: Workflow, tests: list[tuple[str, list, int]]) -> list[ConversationTest]:
    """Create every test of a file, or none: ``tests`` are (name, turns, line); issues carry the line."""
    issues = []
    for index, (name, turns, line) in enumerate(tests):
        try:
            _checked(name, turns)
        except ScriptInvalid as exc:
            issues += [{"test": index, "line": line, **problem} for problem in exc.issues]
    room = settings.SKEIN_TEST_MAX_TESTS - ConversationTest.objects.filter(workflow=workflow).count()
    if not tests:
        issues.append({"test": None, "line": None, **issue(None, None, "content", "the file holds no tests")})
    elif len(tests) > room:
        issues.append(
            {
                "test": None,
                "line": None,
                **issue(None, None, "content", f"a workflow has at most {settings.SKEIN_TEST_MAX_TESTS} tests ({max(room, 0)} more fit)"),
            }
        )
    if issues:
        raise ScriptInvalid(issues, "the file has errors; nothing was imported")
    with transaction.atomic():
        return [ConversationTest.objects.create(workflow=workflow, name=name.strip(), turns=normalized(turns)) for name, turns, _ in tests]


def conversation_test_settings_update(*, workflow: Workflow, publish_requires_passing: bool) -> TestSettings:
    row, _ = TestSettings.objects.update_or_create(workflow=workflow, defaults={"publish_requires_passing": publish_requires_passing})
    return row


# --- test runs ---------------------------------------------------------------------------------------
def _version(workflow: Workflow, version) -> WorkflowVersion:
    if version in (None, "draft"):
        return workflow_services.draft_for_run(workflow=workflow)  # InvalidWorkflow: 400 with the graph's errors
    found = WorkflowVersion.objects.filter(workflow=workflow, number=version).first()
    if found is None:
        raise RunRefused(f"this workflow has no published version {version}", field="version")
    return found


def conversation_test_run_create(
    *, workflow: Workflow, version=None, test_ids: list[int] | None = None, purpose: str = TestRun.Purpose.API
) -> TestRun:
    """A test run of ``test_ids`` (default: every test) against ``version`` (a number, or the draft),
    started on Celery once it is stored. Tests that name what this version does not have are
    recorded as errors without running."""
    tests = list(ConversationTest.objects.filter(workflow=workflow).order_by("name", "id"))
    if test_ids is not None:
        wanted = set(test_ids)
        missing = wanted - {t.pk for t in tests}
        if missing:
            raise RunRefused(f"this workflow has no test {', '.join(str(i) for i in sorted(missing))}")
        tests = [t for t in tests if t.pk in wanted]
    if not tests:
        raise RunRefused("this workflow has no tests to run: add one first")
    if len(tests) > settings.SKEIN_TEST_MAX_TESTS_PER_RUN:
        raise RunRefused(f"a test run runs at most {settings.SKEIN_TEST_MAX_TESTS_PER_RUN} tests; choose some with 'tests'")
    turns = sum(len(t.turns) for t in tests)
    if turns > settings.SKEIN_TEST_MAX_TURNS_PER_RUN:
        raise RunRefused(
            f"a test run runs at most {settings.SKEIN_TEST_MAX_TURNS_PER_RUN} turns (these tests have {turns}); choose fewer tests"
        )
    recent = timezone.now() - timezone.timedelta(seconds=settings.SKEIN_TEST_RUN_STALE_S)
    active = TestRun.objects.filter(workflow=workflow, status__in=[TestRun.Status.QUEUED, TestRun.Status.RUNNING], created__gte=recent)
    if active.count() >= settings.SKEIN_TEST_MAX_ACTIVE_RUNS:
        raise RunRefused(
            f"{settings.SKEIN_TEST_MAX_ACTIVE_RUNS} test runs of this workflow are running; wait for one to finish", status=409
        )

    snapshot = _version(workflow, version)
    targets = selectors.graph_targets(graph=snapshot.graph, owner_id=workflow.owner_id)
    with transaction.atomic():
        test_run = TestRun.objects.create(
            workflow=workflow, version=snapshot, version_number=snapshot.number, draft_revision=snapshot.draft_revision, purpose=purpose
        )
        results = []
        for position, test in enumerate(tests):
            problems = selectors.conversation_test_errors(test=test, targets=targets)
            result = TestResult(test_run=test_run, test=test, position=position, name=test.name, script=test.turns)
            if problems:
                result.status = TestResult.Status.ERROR
                result.error = "cannot run against this version: " + "; ".join(_where(p) for p in problems)
                result.finished = timezone.now()
            results.append(result)
        TestResult.objects.bulk_create(results)
        # robust: a broker that is down must not fail the request after the run was stored.
        transaction.on_commit(lambda: dispatch(tasks.conversation_test_run_start, test_run.pk), robust=True)
    return test_run


def _where(problem: dict) -> str:
    place = []
    if problem.get("turn") is not None:
        place.append(f"turn {problem['turn'] + 1}")
    if problem.get("check") is not None:
        place.append(f"check {problem['check'] + 1}")
    return (", ".join(place) + ": " if place else "") + problem["message"]


def conversation_test_run_wait(*, test_run: TestRun, timeout: float) -> TestRun:
    """Block until the test run finished (or ``timeout``), re-reading it between short pauses and
    handing the database connection back meanwhile."""
    deadline = time.monotonic() + timeout
    while True:
        test_run.refresh_from_db()
        if test_run.is_done or time.monotonic() >= deadline:
            return test_run
        if not connection.in_atomic_block:
            connection.close()
        time.sleep(min(GATE_POLL_S, max(0.0, deadline - time.monotonic())))


# --- the publish gate --------------------------------------------------------------------------------
def workflow_publish_gated(*, workflow: Workflow, by=None) -> WorkflowVersion:
    """Publish; with "publish only when its tests pass" on, first run every test on the draft and
    refuse (``GateFailed``) unless all pass, or if the draft changed while they ran."""
    if selectors.publish_requires_passing(workflow=workflow) and ConversationTest.objects.filter(workflow=workflow).exists():
        test_run = conversation_test_run_create(workflow=workflow, version="draft", purpose=TestRun.Purpose.PUBLISH)
        test_run = conversation_test_run_wait(test_run=test_run, timeout=settings.SKEIN_TEST_GATE_WAIT_S)
        if test_run.status != TestRun.Status.PASSED:
            raise GateFailed(test_run)
        current = Workflow.objects.filter(pk=workflow.pk).values_list("revision", flat=True).first()
        if current != test_run.draft_revision:
            raise StaleRevision(current)
        workflow.refresh_from_db()
    return workflow_services.workflow_publish(workflow=workflow, by=by)
