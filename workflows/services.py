"""Writes of workflows and providers: create and edit a draft, publish it (syncing its triggers),
restore a version into it; store and change providers. Runs are ``runs``', turns ``turns``'."""

from __future__ import annotations

import copy

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from . import versions
from .analysis import InvalidWorkflow, graph_issues
from .models import Provider, Workflow, WorkflowVersion
from .triggers import triggers_sync


class StaleRevision(Exception):
    def __init__(self, current: int):
        super().__init__(f"the workflow was changed meanwhile (now at revision {current}); reload it")
        self.current = current


class KeyNeededAgain(Exception):
    """A stored key would go somewhere its owner did not send it."""


# --- providers ----------------------------------------------------------------------------------
def provider_create(*, owner, name: str, kind: str, api_base: str = "", api_key: str = "") -> Provider:
    provider = Provider(owner=owner, name=name, kind=kind, api_base=api_base or "")
    provider.api_key = api_key or ""
    provider.save()
    return provider


def provider_update(*, provider: Provider, **fields) -> Provider:
    """Change a provider. Moving a stored key (a new ``api_base`` or ``kind``) needs the key again
    in the same change (``api_key``; an empty one removes it): ``KeyNeededAgain`` otherwise."""
    moves = any(name in fields and (fields[name] or "") != getattr(provider, name) for name in ("kind", "api_base"))
    if moves and provider.has_api_key and fields.get("api_key") is None:
        raise KeyNeededAgain(
            "changing the server or the kind of a provider with a stored key needs the key again "
            "(send api_key; an empty one removes the stored key)"
        )
    for name in ("name", "kind", "api_base"):
        if name in fields:
            setattr(provider, name, fields[name] or "")
    if "api_key" in fields and fields["api_key"] is not None:
        provider.api_key = fields["api_key"]
    provider.save()
    return provider


def provider_delete(*, provider: Provider) -> None:
    """Delete a provider (and its stored key); the graphs that name it report it missing."""
    provider.delete()


# --- workflows ----------------------------------------------------------------------------------
def workflow_create(*, owner, name: str, graph: dict) -> Workflow:
    return Workflow.objects.create(owner=owner, name=name, graph=graph)


def workflow_update(*, workflow: Workflow, revision: int, **fields) -> Workflow:
    """Save the draft if ``revision`` is still current; otherwise ``StaleRevision`` (HTTP 409)."""
    changes = {k: v for k, v in fields.items() if k in ("name", "graph")}
    updated = Workflow.objects.filter(pk=workflow.pk, revision=revision).update(
        revision=F("revision") + 1, updated=timezone.now(), **changes
    )
    workflow.refresh_from_db()
    if not updated:
        raise StaleRevision(workflow.revision)
    return workflow


def workflow_delete(*, workflow: Workflow) -> None:
    """Delete a workflow with its versions, runs, threads and memory (its triggers go with it)."""
    workflow.delete()


def workflow_publish(*, workflow: Workflow, by=None) -> WorkflowVersion:
    issues = graph_issues(graph=workflow.graph, owner=workflow.owner)
    if issues:
        raise InvalidWorkflow(issues)
    with transaction.atomic():
        locked = Workflow.objects.select_for_update().get(pk=workflow.pk)
        last = locked.versions.filter(number__isnull=False).order_by("-number").values_list("number", flat=True).first()
        version = WorkflowVersion.objects.create(workflow=locked, number=(last or 0) + 1, graph=locked.graph, published_by=by)
        Workflow.objects.filter(pk=locked.pk).update(published_version=version)
        workflow.published_version = version
        triggers_sync(workflow=workflow, version=version)
    return version


def version_restore(*, workflow: Workflow, number: int, revision: int | None = None) -> Workflow:
    """The draft becomes version ``number``'s graph, as a new revision. With ``revision``, only if
    the draft is still at it (``StaleRevision`` otherwise, like any edit)."""
    version = versions.version_get(workflow=workflow, number=number)
    if version is None or version.number is None:
        raise versions.VersionNotFound(f"this workflow has no version {number}")
    return workflow_update(
        workflow=workflow, revision=workflow.revision if revision is None else revision, graph=copy.deepcopy(version.graph)
    )
