"""Writes of workflows: create and edit a draft, publish it (the triggers app syncs its triggers),
restore a version into it, and the draft's snapshots that the editor's runs execute. Runs and turns are
the runs app's."""

from __future__ import annotations

import copy

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core.errors import DomainError
from workflows import versions
from workflows.analysis import InvalidWorkflow, graph_issues
from workflows.models import Workflow, WorkflowVersion
from workflows.signals import version_published


class StaleRevision(DomainError):
    """The draft was changed since the revision the edit is based on (HTTP 409 with the current one)."""

    status = 409

    def __init__(self, current: int):
        super().__init__(f"the workflow was changed meanwhile (now at revision {current}); reload it")
        self.current = current

    def body(self) -> dict:
        return {"detail": self.message, "revision": self.current}


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
    issues = graph_issues(graph=workflow.graph, owner=workflow.owner, workflow_id=workflow.pk)
    if issues:
        raise InvalidWorkflow(issues)
    with transaction.atomic():
        locked = Workflow.objects.select_for_update().get(pk=workflow.pk)
        last = locked.versions.filter(number__isnull=False).order_by("-number").values_list("number", flat=True).first()
        version = WorkflowVersion.objects.create(workflow=locked, number=(last or 0) + 1, graph=locked.graph, published_by=by)
        Workflow.objects.filter(pk=locked.pk).update(published_version=version)
        workflow.published_version = version
        version_published.send(sender=Workflow, workflow=workflow, version=version)  # the triggers sync
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
    issues = graph_issues(graph=workflow.graph, owner=workflow.owner, workflow_id=workflow.pk)
    if issues:
        raise InvalidWorkflow(issues)
    return draft_snapshot(workflow=workflow)
