"""Turns started from a connection that streams their events: the widget's WebSocket
(``consumers.WidgetConsumer``) and the developers' SSE stream (``api/stream.py``).

Both subscribe to a thread's events and must tell which runs are theirs: a run's payload carries
the mark of the connection that started it (the widget's ``client_id``, the stream's ``stream``
id), and its reply nodes say which tokens are the reply as it is written. ``ConnectionRuns`` looks
each run up once per connection. The stream's own services (the version and thread a streamed
turn runs on, its start) are here too.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from channels.db import database_sync_to_async
from django.db import transaction

from . import runs, threads
from .analysis import InvalidWorkflow, graph_issues, reply_nodes
from .models import Run, Thread, Workflow
from .widget import WidgetError

# Starting a turn from async code (the widget socket, the SSE stream) runs in these threads: in the
# embedded mode the whole turn runs inside that call, and must not hold up other connections.
turn_executor = ThreadPoolExecutor(max_workers=16, thread_name_prefix="skein-turn")


@dataclass(frozen=True)
class RunMarks:
    """What ties a run to the connection that started it, and the nodes whose tokens are its reply."""

    client_id: str | None = None
    stream: str | None = None
    reply_nodes: frozenset[str] = frozenset()


def run_marks(*, run_id: int) -> RunMarks:
    run = Run.objects.filter(pk=run_id).select_related("version").only("payload", "version__graph").first()
    if run is None:
        return RunMarks()
    payload = run.payload or {}
    return RunMarks(client_id=payload.get("client_id"), stream=payload.get("stream"), reply_nodes=reply_nodes(run.version))


class ConnectionRuns:
    """The runs one connection has seen events of, each looked up once (``run_marks``)."""

    def __init__(self):
        self._marks: dict[int, RunMarks] = {}

    async def marks(self, run_id: int) -> RunMarks:
        marks = self._marks.get(run_id)
        if marks is None:
            marks = self._marks[run_id] = await database_sync_to_async(run_marks)(run_id=run_id)
        return marks


# --- the developers' streaming chat API (workflows/api/stream.py) -------------------------------
def stream_thread(*, workflow: Workflow, thread: Thread | None, message: str, participant=None) -> Thread:
    """The thread a streamed turn runs on: created first, so the stream can subscribe to it."""
    if thread is not None:
        return thread
    return threads.thread_create(workflow=workflow, first_message=message, participant=participant)


def stream_version(*, workflow: Workflow, version: str):
    """``draft`` (a snapshot of the current draft, as ``POST .../chat/`` runs) or ``published``."""
    if version == "published":
        if workflow.published_version is None:
            raise WidgetError("not_published", "This workflow is not published yet.", status=409)
        return workflow.published_version
    issues = graph_issues(graph=workflow.graph, owner=workflow.owner)
    if issues:
        raise InvalidWorkflow(issues)
    return runs.draft_snapshot(workflow=workflow)


def stream_run_start(*, version, thread: Thread, message: str, stream_id: str, payload: dict | None = None, **run_fields) -> Run:
    """Create the run (in the embedded mode: run the whole turn). ``stream_id`` in its payload lets
    the stream tell its run's events from those of other runs on the thread before this returns.
    ``run_fields`` go to ``runs.run_create`` (``spender``, ``trace_context``, ``participant``)."""
    with transaction.atomic():
        return runs.run_create(
            version=version,
            trigger="chat",
            input_text=message,
            thread=thread,
            payload={"source": "api", **(payload or {}), "stream": stream_id},
            **run_fields,
        )
