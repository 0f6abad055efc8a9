"""Reads, always scoped to an owner: another user's objects simply do not exist (404)."""

from __future__ import annotations

import json

from django.db.models import Exists, OuterRef, Q, QuerySet

from . import samples
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
    return Run.objects.filter(workflow__owner=owner, pk=run_id).prefetch_related("steps", "summarizations", "fact_extractions").first()


MAX_DEFAULT_LISTINGS = 3


def model_default(*, owner) -> dict:
    """The model a new node (or template, or demo) starts with on this installation, for ``owner``:
    ``{provider, model}``. A provider of the owner's that can be called (the newest first), else a
    model the environment's keys reach, else the bundled local model: something that answers."""
    from . import llm

    providers = list(Provider.objects.filter(owner=owner).order_by("-created", "-id"))
    asked = 0  # servers asked for their model list: a few at most, each briefly (the editor waits)
    for provider in providers:
        if provider.kind == "local" or llm.credentials_problem(model="", provider=provider) is not None:
            continue
        if llm.needs_listing(provider):
            if asked == MAX_DEFAULT_LISTINGS:
                continue
            asked += 1
        model = llm.default_model(provider, timeout=2.0)
        if model:
            return {"provider": provider.pk, "model": model}
    for kind in llm.ENVIRONMENT_KEYS:
        model = llm.DEFAULT_MODELS[kind]
        if llm.credentials_problem(model=model, provider=None) is None:
            return {"provider": None, "model": model}
    local = next((p for p in reversed(providers) if p.kind == "local"), None)
    if local is not None:
        return {"provider": local.pk, "model": llm.DEFAULT_MODELS["local"]}
    return {"provider": None, "model": f"{llm.local_model.PROVIDER}/{llm.local_model.MODEL_NAME}"}


def workflow_unpublished_changes(*, workflow: Workflow) -> bool:
    """Whether the draft would behave differently from the published version (None: nothing is
    published). Where the nodes sit on the canvas is not a change; their params and edges are."""
    published = workflow.published_version
    return published is not None and _behaviour(workflow.graph) != _behaviour(published.graph)


def _behaviour(graph) -> tuple:
    graph = graph if isinstance(graph, dict) else {}
    nodes = graph.get("nodes") if isinstance(graph.get("nodes"), list) else []
    edges = graph.get("edges") if isinstance(graph.get("edges"), list) else []
    return (
        sorted(json.dumps([n.get("id"), n.get("type"), n.get("data")], sort_keys=True) for n in nodes if isinstance(n, dict)),
        sorted(json.dumps([e.get(k) for k in ("source", "sourceHandle", "target", "targetHandle")]) for e in edges if isinstance(e, dict)),
    )


def participant_list(*, owner, workflow=None, search: str | None = None):
    """The owner's participants, most recently seen first, with how many threads each has."""
    from django.db.models import Count

    from .models import Participant

    query = Participant.objects.filter(owner=owner)
    if workflow:
        query = query.filter(Q(threads__workflow_id=workflow) | Q(runs__workflow_id=workflow)).distinct()
    if search:
        query = query.filter(external_id__icontains=search)
    return query.annotate(thread_count=Count("threads", distinct=True)).order_by("-last_seen", "-id")


def participant_get(*, owner, participant_id):
    from .models import Participant

    return Participant.objects.filter(owner=owner, pk=participant_id).first()


def participant_threads(*, participant) -> QuerySet[Thread]:
    return Thread.objects.filter(participant=participant).select_related("workflow").order_by("-updated", "-id")


def template_list(*, owner) -> list[dict]:
    """The workflow list's templates (``samples.TEMPLATES``), their nodes that call a model on the
    model a new node gets here, so a workflow made from one answers at once."""
    return samples.templates(model_default(owner=owner))
