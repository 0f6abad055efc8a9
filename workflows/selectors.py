"""Reads, always scoped to an owner: another user's objects simply do not exist (404)."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q, QuerySet

from .models import Message, Provider, Run, Thread, Workflow


def workflow_list(*, owner) -> QuerySet[Workflow]:
    return Workflow.objects.filter(owner=owner)


def workflow_published_list(*, owner) -> QuerySet[Workflow]:
    """The owner's workflows that have a published version (the OpenAI endpoint's models)."""
    return Workflow.objects.filter(owner=owner, published_version__isnull=False).select_related("owner").order_by("pk")


def workflow_get(*, owner, workflow_id) -> Workflow | None:
    return Workflow.objects.filter(owner=owner, pk=workflow_id).select_related("published_version").first()


def provider_list(*, owner) -> QuerySet[Provider]:
    return Provider.objects.filter(owner=owner)


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
    return Run.objects.filter(workflow__owner=owner, pk=run_id).prefetch_related("steps", "summarizations").first()
