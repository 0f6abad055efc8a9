"""Executing a test run: each test in a fresh thread, its turns in order through the same run and
turn services every chat uses; several tests at once; progress to the browser as each turn ends.

A test run starts ``SKEIN_TEST_PARALLEL`` tests as Celery tasks; each task, when its test is done,
starts the next queued one, and the last one to finish closes the run. In the embedded mode tasks
run eagerly, in-process: there they go to a small thread pool instead, so the request that started
the run answers at once and progress streams like in the full mode.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.db import OperationalError, connections, transaction
from django.db.models import Sum
from django.utils import timezone

from conversation_tests import selectors, tasks
from conversation_tests.checks import ERROR, FAILED, PASSED, TurnOutcome, Verdict, evaluate, result_entry, shown, target_issues
from conversation_tests.judge import judge_reply
from conversation_tests.models import TestResult, TestRun
from runs import events, locks, threads, turns
from runs import services as runs
from runs.models import Run
from workflows.analysis import version_analysis

logger = logging.getLogger("skein.tests")

TEST_SCOPE = 17  # turn-lock scope of a test result: one execution of a test at a time
MAX_ATTEMPTS = 3
FINISH_ATTEMPTS = 3
WAIT_POLL_S = 0.1
TRIGGER_PREFERENCE = ("chat", "webhook", "manual")

_background = ThreadPoolExecutor(max_workers=8, thread_name_prefix="skein-tests")


def dispatch(task, *args) -> None:
    """Enqueue a Celery task; in the embedded mode (eager tasks) run it on a background thread.

    There, when this process serves sockets (daphne), the thread is started from the serving event
    loop, so that the events it sends are delivered on that loop: the in-memory channel layer's
    queues belong to it and are not woken from another one."""
    if not settings.CELERY_TASK_ALWAYS_EAGER or _in_memory_database():
        task.delay(*args)
        return
    loop = _serving_loop()
    if loop is None:
        _background.submit(_run_eagerly, task, args)
    else:
        asyncio.run_coroutine_threadsafe(sync_to_async(_run_eagerly, thread_sensitive=False, executor=_background)(task, args), loop)


def _in_memory_database() -> bool:
    """An in-memory SQLite database (tests without DATABASE_URL): its tables lock out a second
    writer at once instead of waiting, so there tasks run in the calling thread, one after another."""
    connection = connections["default"]
    return connection.vendor == "sqlite" and connection.creation.is_in_memory_db(connection.settings_dict["NAME"])


def _serving_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop that started this thread's work (a request's or a socket's), if one runs."""

    async def current():
        return asyncio.get_running_loop()

    try:
        loop = async_to_sync(current)()
    except Exception:  # inside a running loop, or asgiref could not restore its context: use the pool
        return None
    return loop if loop.is_running() else None


def _run_eagerly(task, args) -> None:
    try:
        task.delay(*args)
    except Exception:  # a background thread has nobody to raise to
        logger.exception("%s%s failed", task.name, args)
    finally:
        connections.close_all()  # this thread's connections


def conversation_test_run_start(*, test_run_id: int) -> None:
    with transaction.atomic():
        test_run = TestRun.objects.select_for_update().filter(pk=test_run_id).first()
        if test_run is None or test_run.is_done:
            return
        if test_run.status == TestRun.Status.QUEUED:
            test_run.status = TestRun.Status.RUNNING
            test_run.started = timezone.now()
            test_run.save(update_fields=["status", "started"])
    started = 0
    for _ in range(settings.SKEIN_TEST_PARALLEL):
        result_id = _claim_next(test_run_id)
        if result_id is None:
            break
        dispatch(tasks.conversation_test_execute, result_id)
        started += 1
    if not started:
        conversation_test_run_finish_if_done(test_run_id=test_run_id)


def _claim_next(test_run_id: int) -> int | None:
    """Take the next queued test of the run (a conditional update: two lanes never take the same)."""
    queued = TestResult.objects.filter(test_run_id=test_run_id, status=TestResult.Status.QUEUED).order_by("position")
    for result_id in queued.values_list("id", flat=True)[:50]:
        if TestResult.objects.filter(pk=result_id, status=TestResult.Status.QUEUED).update(status=TestResult.Status.RUNNING):
            return result_id
    return None


def conversation_test_execute(*, result_id: int) -> None:
    """Run one test (a redelivered task finds it running and leaves), then start the next one."""
    result = TestResult.objects.filter(pk=result_id).select_related("test_run").first()
    if result is None:
        return
    with locks.try_turn_lock(TEST_SCOPE, result_id) as acquired:
        if not acquired:
            return  # another worker is executing this test right now
        result.refresh_from_db()
        if not result.is_done:
            try:
                _execute(result)
            except Exception as exc:  # never leave a test running because of a bug: end it, loudly
                logger.exception("test result %s crashed", result_id)
                _result_finish(result, status=ERROR, error=f"internal error: {type(exc).__name__}: {exc}")
    next_id = _claim_next(result.test_run_id)
    if next_id is not None:
        dispatch(tasks.conversation_test_execute, next_id)
    for attempt in range(FINISH_ATTEMPTS):  # the run must not stay open because one write failed
        try:
            conversation_test_run_finish_if_done(test_run_id=result.test_run_id)
            return
        except OperationalError:
            if attempt == FINISH_ATTEMPTS - 1:
                raise
            time.sleep(0.2 * (attempt + 1))


def _trigger(version) -> str | None:
    types = {rn.node_type.type for rn in version_analysis(version).nodes.values()}
    return next((kind for kind in TRIGGER_PREFERENCE if f"trigger.{kind}" in types), None)


def _execute(result: TestResult) -> None:
    test_run = TestRun.objects.select_related("workflow", "version").get(pk=result.test_run_id)
    workflow, version = test_run.workflow, test_run.version
    if result.attempts >= MAX_ATTEMPTS:
        _result_finish(result, status=ERROR, error=f"the test was interrupted {result.attempts} times; giving up")
        return
    if version is None:
        _result_finish(result, status=ERROR, error="the version this run tested no longer exists")
        return
    trigger = _trigger(version)
    if trigger is None:
        _result_finish(result, status=ERROR, error="the workflow has no chat, webhook or manual trigger to send the messages to")
        return
    targets = selectors.targets_of(analysis=version_analysis(version), owner_id=workflow.owner_id)
    problems = target_issues(result.script, targets)
    if problems:
        _result_finish(result, status=ERROR, error="cannot run against this version: " + "; ".join(p["message"] for p in problems))
        return
    # A fresh thread for every attempt: thread-keyed memory starts empty and seeds apply.
    with transaction.atomic():
        thread = threads.thread_create(workflow=workflow, title=f"Test: {result.name}"[:200])
        result.thread = thread
        result.attempts += 1
        result.status = TestResult.Status.RUNNING
        result.started, result.finished = timezone.now(), None
        result.turns, result.error = [], ""
        result.prompt_tokens = result.completion_tokens = 0
        result.cost = 0.0
        result.save()
        events.publish_test_run(events.TEST_STARTED, _event(result), test_run_id=test_run.pk)

    conversation: list[dict] = []
    statuses = []
    for index, turn in enumerate(result.script):
        entry, status = _turn(result, version, trigger, thread, turn, conversation, targets, workflow.owner_id)
        statuses.append(status)
        with transaction.atomic():
            result.turns = result.turns + [entry]
            result.prompt_tokens += entry["prompt_tokens"]
            result.completion_tokens += entry["completion_tokens"]
            result.cost += entry["cost"]
            result.save(update_fields=["turns", "prompt_tokens", "completion_tokens", "cost", "updated"])
            events.publish_test_run(
                events.TEST_TURN,
                {**_event(result), "turn": index, "turns": len(result.script), "status": status, "reply": shown(entry["reply"])},
                test_run_id=test_run.pk,
            )
        if entry["error"]:  # the turn itself failed: the conversation cannot go on as scripted
            _result_finish(result, status=ERROR, error=f"turn {index + 1}: {entry['error']}")
            return
        conversation += [{"role": "user", "content": turn["message"]}, {"role": "assistant", "content": entry["reply"]}]
    _result_finish(result, status=FAILED if FAILED in statuses else ERROR if ERROR in statuses else PASSED)


def _turn(result, version, trigger, thread, turn, conversation, targets, owner_id) -> tuple[dict, str]:
    """Send one scripted message through the run and turn services, then check what happened."""
    message = turn["message"]
    with transaction.atomic():
        run = runs.run_create(
            version=version,
            trigger=trigger,
            input_text=message,
            thread=thread,
            payload={"message": message} if trigger == "webhook" else {},
        )
    # Take the turn here rather than wait for a worker to (it holds the thread's turn lock, so a
    # worker that gets the enqueued task first runs it instead, and this waits for it).
    turns.turn_process(run_id=run.pk)
    run = _run_wait(run)
    entry = {
        "message": message,
        "reply": run.output,
        "run": run.pk,
        "status": ERROR,
        "error": "",
        "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens,
        "cost": run.cost,
        "checks": [],
    }
    if turn.get("reference"):
        entry["reference"] = turn["reference"]
    if not run.is_done or run.status == Run.Status.FAILED:
        entry["error"] = f"the turn failed: {run.error}" if run.is_done else "the turn did not finish in time"
        entry["checks"] = [result_entry(raw, Verdict(ERROR, entry["error"])) for raw in turn["expect"]]
        return entry, ERROR

    outcome = TurnOutcome(
        reply=run.output,
        sent=selectors.turn_sent(run=run),
        models=targets.model_nodes,
        summary=lambda name: selectors.memory_summary(
            workflow_id=run.workflow_id, thread_id=thread.pk, run_id=run.pk, target=targets.summaries[name]
        ),
        judge=lambda value: judge_reply(owner_id=owner_id, conversation=conversation, reply=run.output, **value),
    )
    verdicts = []
    for raw in turn["expect"]:
        check, verdict = evaluate(raw, outcome)
        entry["checks"].append(check)
        verdicts.append(verdict.status)
        entry["prompt_tokens"] += verdict.prompt_tokens
        entry["completion_tokens"] += verdict.completion_tokens
        entry["cost"] += verdict.cost
    entry["status"] = FAILED if FAILED in verdicts else ERROR if ERROR in verdicts else PASSED
    return entry, entry["status"]


def _run_wait(run: Run) -> Run:
    """The run once done: at once when this task took the turn; else a worker has it, and this
    re-reads it (keeping its database connection, which holds the test's lock) until it is."""
    deadline = time.monotonic() + settings.SKEIN_CHAT_WAIT_S
    run.refresh_from_db()
    while not run.is_done and time.monotonic() < deadline:
        time.sleep(WAIT_POLL_S)
        run.refresh_from_db()
    return run


def _event(result: TestResult) -> dict:
    return {"result": result.pk, "test": result.test_id, "name": result.name, "position": result.position}


def _result_finish(result: TestResult, *, status: str, error: str = "") -> None:
    with transaction.atomic():
        result.status = status
        result.error = error
        result.finished = timezone.now()
        result.save(update_fields=["status", "error", "finished", "updated"])
        events.publish_test_run(events.TEST_FINISHED, {**_event(result), "status": status, "error": error}, test_run_id=result.test_run_id)


def conversation_test_run_finish_if_done(*, test_run_id: int) -> None:
    """Close the run once none of its tests is queued or running (whoever gets here last)."""
    with transaction.atomic():
        test_run = TestRun.objects.select_for_update().filter(pk=test_run_id).first()
        if test_run is None or test_run.is_done:
            return
        results = TestResult.objects.filter(test_run=test_run)
        if results.filter(status__in=[TestResult.Status.QUEUED, TestResult.Status.RUNNING]).exists():
            return
        counts = {status: results.filter(status=status).count() for status in (PASSED, FAILED, ERROR)}
        usage = results.aggregate(p=Sum("prompt_tokens"), c=Sum("completion_tokens"), cost=Sum("cost"))
        test_run.passed, test_run.failed, test_run.errors = counts[PASSED], counts[FAILED], counts[ERROR]
        test_run.prompt_tokens, test_run.completion_tokens, test_run.cost = usage["p"] or 0, usage["c"] or 0, usage["cost"] or 0.0
        test_run.status = TestRun.Status.FAILED if test_run.failed else TestRun.Status.ERROR if test_run.errors else TestRun.Status.PASSED
        test_run.finished = timezone.now()
        test_run.save()
        events.publish_test_run(
            events.TEST_RUN_FINISHED,
            {"status": test_run.status, "passed": test_run.passed, "failed": test_run.failed, "errors": test_run.errors},
            test_run_id=test_run.pk,
        )


def conversation_test_runs_recover(*, older_than_s: float = 60) -> list[int]:
    """Take up test runs whose tasks were lost (the broker was down when they were enqueued, or a
    worker died): start the queued ones, re-enqueue their tests that made no progress for
    ``older_than_s`` (safe: a test still executing holds its lock, and the copy leaves), and close
    the ones with nothing left to run. Returns the test runs it touched."""
    cutoff = timezone.now() - timezone.timedelta(seconds=older_than_s)
    touched = []
    for test_run in TestRun.objects.filter(status__in=[TestRun.Status.QUEUED, TestRun.Status.RUNNING], created__lt=cutoff)[:200]:
        touched.append(test_run.pk)
        if test_run.status == TestRun.Status.QUEUED:
            dispatch(tasks.conversation_test_run_start, test_run.pk)
            continue
        stale = test_run.results.filter(status=TestResult.Status.RUNNING, updated__lt=cutoff).values_list("id", flat=True)
        for result_id in stale:
            dispatch(tasks.conversation_test_execute, result_id)
        if not test_run.results.filter(status=TestResult.Status.RUNNING).exists():
            if (next_id := _claim_next(test_run.pk)) is not None:
                dispatch(tasks.conversation_test_execute, next_id)
            else:
                conversation_test_run_finish_if_done(test_run_id=test_run.pk)
    if touched:
        logger.warning("took up %d unfinished test run(s): %s", len(touched), touched)
    return touched
