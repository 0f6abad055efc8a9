"""Reads, always scoped to an owner: another user's objects simply do not exist (404)."""

from __future__ import annotations

import json

from django.db.models import QuerySet

from workflows.models import Workflow


def workflow_list(*, owner) -> QuerySet[Workflow]:
    return Workflow.objects.filter(owner=owner)


def workflow_published_list(*, owner) -> QuerySet[Workflow]:
    """The owner's workflows that have a published version (the OpenAI endpoint's models)."""
    return Workflow.objects.filter(owner=owner, published_version__isnull=False).select_related("owner").order_by("pk")


def workflow_get(*, owner, workflow_id) -> Workflow | None:
    return Workflow.objects.filter(owner=owner, pk=workflow_id).select_related("published_version").first()


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
