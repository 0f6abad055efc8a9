"""Reads of conversations, always scoped to an owner: another user's threads and runs simply do
not exist (404)."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q, QuerySet

from runs.models import Message, Run, Thread
from workflows.models import Workflow


def thread_get(*, owner, thread_id, workflow: Workflow | None = None) -> Thread | None:
    query = Thread.objects.filter(owner=owner, pk=thread_id)
    if workflow is not None:
        query = query.filter(workflow=workflow)
    return query.first()


def thread_list(*, owner, workflow=None, search: str | None = None) -> QuerySet[Thread]:
    """The owner's threads, most recently active first; ``search`` finds words in their titles and
    messages (case-insensitive)."""
    query = Thread.objects.filter(owner=owner).select_related("workflow")
    if workflow:
        query = query.filter(workflow_id=workflow)
    if search:
        said = Message.objects.filter(thread=OuterRef("pk"), content__icontains=search)
        query = query.filter(Q(title__icontains=search) | Exists(said))
    return query.order_by("-updated", "-id")


def thread_messages(*, thread: Thread) -> QuerySet[Message]:
    return Message.objects.filter(thread=thread).order_by("seq")


def run_list(*, owner, workflow=None, trigger=None, status=None, thread=None) -> QuerySet[Run]:
    query = Run.objects.filter(workflow__owner=owner).select_related("workflow")
    if workflow:
        query = query.filter(workflow_id=workflow)
    if trigger:
        query = query.filter(trigger=trigger)
    if status:
        query = query.filter(status=status)
    if thread:
        query = query.filter(thread_id=thread)
    return query.order_by("-id")


def run_get(*, owner, run_id) -> Run | None:
    return Run.objects.filter(workflow__owner=owner, pk=run_id).prefetch_related("steps", "summarizations", "fact_extractions").first()


def thread_graph(*, thread: Thread) -> dict:
    """The graph the thread last ran (its memories are that graph's), else the workflow's draft."""
    last_run = thread.runs.select_related("version").order_by("-id").first()
    return last_run.version.graph if last_run else thread.workflow.graph
