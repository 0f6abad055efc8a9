"""Writes of runs: create one and enqueue its turn, the chat and Run-button starts, and
re-enqueueing turns nobody is executing. The draft's snapshot they run is ``workflows.services``';
waiting for a run is ``runs.waiting``'s; executing its turn ``runs.turns``'."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from core.backends import backend
from core.errors import DomainError
from runs import locks, threads
from runs.models import Run, Thread
from runs.tasks import run_turn
from runs.threads import thread_participant
from workflows.analysis import trigger_node
from workflows.models import Workflow, WorkflowVersion
from workflows.services import draft_for_run

logger = logging.getLogger("skein.runs")


class NoTrigger(DomainError):
    """The version has no trigger node of the kind that was fired (HTTP 400)."""


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
    enqueue: bool = True,
) -> Run:
    """Create a run and enqueue its turn once the transaction commits (unless ``enqueue`` is off:
    its caller executes it). ``participant`` (a ``Participant``) is who talks; on a thread it must
    be the thread's (``participants``)."""
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
    # Robust where a broker takes the turn: one that is down must not fail the request after the run
    # was stored (the client would send it again); it stays queued and recover_turns enqueues it.
    # Where the turn runs in the request (embedded), its failure is the request's.
    if enqueue:
        transaction.on_commit(lambda: run_turn.delay(run.pk), robust=not backend().turns_in_request)
    return run


def _trigger_node(version: WorkflowVersion, trigger_type: str) -> str:
    node_id = trigger_node(version, trigger_type)
    if node_id is None:
        raise NoTrigger(f"this workflow has no trigger.{trigger_type} node")
    return node_id


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
