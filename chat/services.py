"""What the chat API does beyond starting a run (``runs.services``): the version and the thread a
streamed turn runs on, known before its stream starts."""

from __future__ import annotations

from core.errors import DomainError
from runs import threads
from runs.models import Thread
from workflows import services as workflow_services
from workflows.analysis import InvalidWorkflow, graph_issues
from workflows.models import Workflow


class NotPublished(DomainError):
    """``version: published`` and nothing is published (HTTP 409)."""

    status = 409
    code = "not_published"


def stream_thread(*, workflow: Workflow, thread: Thread | None, message: str, participant=None) -> Thread:
    """The thread a streamed turn runs on: created first, so the stream can subscribe to it."""
    if thread is not None:
        return thread
    return threads.thread_create(workflow=workflow, first_message=message, participant=participant)


def stream_version(*, workflow: Workflow, version: str):
    """``draft`` (a snapshot of the current draft, as ``POST .../chat/`` runs) or ``published``."""
    if version == "published":
        if workflow.published_version is None:
            raise NotPublished("This workflow is not published yet.")
        return workflow.published_version
    issues = graph_issues(graph=workflow.graph, owner=workflow.owner, workflow_id=workflow.pk)
    if issues:
        raise InvalidWorkflow(issues)
    return workflow_services.draft_snapshot(workflow=workflow)
