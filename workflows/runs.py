"""Writes of runs: create one and enqueue its turn, the chat and Run-button starts, the draft's
snapshot they run, and re-enqueueing turns nobody is executing. Waiting for a run is
``waiting``'s; executing its turn is ``turns``'."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from . import locks, mode, threads
from .analysis import InvalidWorkflow, graph_issues, trigger_node
from .models import Run, Thread, Workflow, WorkflowVersion
from .participants import thread_participant
from .tasks import run_turn

logger = logging.getLogger("skein.runs")


class NoTrigger(Exception):
    pass


def run_create(
    *,
    version: WorkflowVersion,
    trigger: str,
    input_text: str,
    payload: dict | None = None,
    thread: Thread | None = None,
    trigger_node: str | None = None,
    idempotency_key: str | None = None,
    spender: str = "",
    trace_context: str = "",
    participant=None,
) -> Run:
    """Create a run and enqueue its turn once the transaction commits. ``participant`` (a
    ``Participant``) is who talks; on a thread it must be the thread's (``participants``)."""
    run = Run.objects.create(
        workflow_id=version.workflow_id,
        version=version,
        thread=thread,
        participant=thread_participant(thread=thread, participant=participant),
        trigger=trigger,
        trigger_node=trigger_node or _trigger_node(version, trigger),
        input=input_text,
        payload=payload or {},
        idempotency_key=idempotency_key or None,
        spender=spender[:240],
        trace_context=trace_context[:128],
    )
    # robust in the full mode: a broker that is down must not fail the request after the run was
    # stored (the client would send it again); it stays queued and recover_turns enqueues it.
    transaction.on_commit(lambda: run_turn.delay(run.pk), robust=mode.full())
    return run


def _trigger_node(version: WorkflowVersion, trigger_type: str) -> str:
    node_id = trigger_node(version, trigger_type)
    if node_id is None:
        raise NoTrigger(f"this workflow has no trigger.{trigger_type} node")
    return node_id


def draft_snapshot(*, workflow: Workflow) -> WorkflowVersion:
    """The draft as an immutable version, one per draft revision, for test runs."""
    version, _ = WorkflowVersion.objects.get_or_create(
        workflow=workflow, draft_revision=workflow.revision, defaults={"graph": workflow.graph}
    )
    return version


def draft_for_run(*, workflow: Workflow) -> WorkflowVersion:
    """The draft's snapshot, if it is valid enough to run (``InvalidWorkflow`` otherwise).

    A snapshot exists only for a revision that passed validation, so later turns on the same
    revision skip it (a provider deleted since then fails the run with a clear step error)."""
    existing = WorkflowVersion.objects.filter(workflow=workflow, draft_revision=workflow.revision).first()
    if existing is not None:
        return existing
    issues = graph_issues(graph=workflow.graph, owner=workflow.owner)
    if issues:
        raise InvalidWorkflow(issues)
    return draft_snapshot(workflow=workflow)


def manual_start(*, workflow: Workflow, message: str) -> Run:
    """The editor's Run button: the draft's ``trigger.manual``, with no thread (memory binds to the run)."""
    return run_create(version=draft_for_run(workflow=workflow), trigger="manual", input_text=message)


def chat_start(*, workflow: Workflow, message: str, thread: Thread | None, version: WorkflowVersion | None = None, participant=None) -> Run:
    """A participant's chat message: runs ``version`` (default: the draft) on the thread."""
    if version is None:
        version = draft_for_run(workflow=workflow)
    with transaction.atomic():
        if thread is None:
            thread = threads.thread_create(workflow=workflow, first_message=message, participant=participant)
        return run_create(version=version, trigger="chat", input_text=message, thread=thread, participant=participant)


def turns_recover(*, older_than_s: float = 60) -> list[int]:
    """Re-enqueue unfinished runs that nobody is executing: their turn lock is free although they
    have waited for ``older_than_s`` (their task was lost, or their worker died)."""
    cutoff = timezone.now() - timezone.timedelta(seconds=older_than_s)
    stale = Run.objects.filter(status__in=[Run.Status.QUEUED, Run.Status.RUNNING], created__lt=cutoff).order_by("id")
    recovered, seen_scopes = [], set()
    for run in stale.only("id", "thread_id")[:500]:
        scope = locks.turn_scope(run)
        if scope in seen_scopes:
            continue
        seen_scopes.add(scope)
        with locks.try_turn_lock(*scope) as free:
            if not free:
                continue  # someone is executing this thread's turns right now
        run_turn.delay(run.pk)
        recovered.append(run.pk)
    if recovered:
        logger.warning("re-enqueued %d orphaned turn(s): %s", len(recovered), recovered)
    return recovered
