"""Turns started from a connection that streams their events: the widget's WebSocket
(``widget.consumers``), the developers' SSE stream (``chat.api``) and ``/v1``'s streamed answers
(``openai_api.api``).

Each subscribes to a thread's events and must tell which runs are its own: a run's payload carries
the mark of the connection that started it (the widget's ``client_id``, the stream's ``stream``
id), and its reply nodes say which tokens are the reply as it is written. ``ConnectionRuns`` looks
each run up once per connection. ``turn_feed`` is a streamed turn from the start of its run to its
last event, whoever forwards it.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction

from runs import events
from runs import services as runs
from runs.models import Run, Thread
from workflows.analysis import reply_nodes

# Starting a turn from async code (the widget socket, the SSE stream) runs in these threads: in the
# embedded mode the whole turn runs inside that call, and must not hold up other connections.
turn_executor = ThreadPoolExecutor(max_workers=16, thread_name_prefix="skein-turn")
logger = logging.getLogger("skein.realtime")


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


HEARTBEAT_S = 15.0
OPEN, KEEPALIVE = "stream.open", "stream.keepalive"  # turn_feed's own markers, not events
_starts: set[asyncio.Future] = set()
TERMINAL = (events.RUN_FINISHED, events.RUN_FAILED)


def run_ending(*, run_id: int) -> tuple[str, dict] | None:
    """A run's last event, from the database, once it ended (``run.finished`` or ``run.failed``)."""
    run = Run.objects.filter(pk=run_id).only("status", "output", "error", "warnings").first()
    if run is None or not run.is_done:
        return None
    if run.status == Run.Status.SUCCEEDED:
        cut = run.steps.filter(type="output", details__cut=True).exists()
        return events.RUN_FINISHED, {"run": run.pk, "reply": run.output, "warnings": run.warnings, "cut": cut}
    return events.RUN_FAILED, {"run": run.pk, "error": run.error}


async def turn_feed(*, version, thread, message: str, timeout: float | None = None, payload: dict | None = None, **run_fields):
    """Subscribe to the thread, start the run, and yield ``(type, data)`` as it runs: ``OPEN``
    first, ``KEEPALIVE`` when quiet for a while, ``accepted``, the run's events, and last
    ``run.finished``, ``run.failed`` or ``error``. ``payload`` and ``run_fields`` go to the run."""
    layer = get_channel_layer()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + (settings.SKEIN_CHAT_WAIT_S if timeout is None else timeout)
    channel = await layer.new_channel()
    group = events.thread_group(thread.pk)
    await layer.group_add(group, channel)
    stream_id = secrets.token_hex(12)
    start = asyncio.ensure_future(
        database_sync_to_async(stream_run_start, thread_sensitive=False, executor=turn_executor)(
            version=version, thread=thread, message=message, stream_id=stream_id, payload=payload, **run_fields
        )
    )
    # Never cancelled (a client that leaves must not break the turn: asgiref would cancel the event
    # send the turn is blocked in) and strongly referenced until done.
    _starts.add(start)
    start.add_done_callback(_starts.discard)
    receive: asyncio.Future | None = None
    run_id: int | None = None
    owners: dict[int, bool] = {}  # run id -> started by this stream
    seen = ConnectionRuns()
    try:
        yield OPEN, None
        while True:
            receive = receive or asyncio.ensure_future(layer.receive(channel))
            waiting = {receive} | ({start} if run_id is None else set())
            remaining = deadline - loop.time()
            if remaining <= 0:
                yield "error", {"code": "timeout", "message": "the turn did not finish in time", "run": run_id}
                return
            done, _ = await asyncio.wait(waiting, timeout=min(HEARTBEAT_S, remaining), return_when=asyncio.FIRST_COMPLETED)
            lost = receive in done and receive.exception() is not None
            if lost:  # the channel layer lost Redis (restarting): the events sent meanwhile are gone
                logger.warning("stream of thread %s: %s", thread.pk, receive.exception())
                receive = None
            if not done or lost:
                # Quiet for a heartbeat, or events lost: the run may have ended without its last
                # event reaching us (Redis restarted), so the database has the last word.
                if run_id is not None and (ended := await database_sync_to_async(run_ending)(run_id=run_id)):
                    yield ended
                    return
                if lost:
                    await asyncio.sleep(min(1.0, max(0.0, deadline - loop.time())))
                    try:  # a restarted Redis forgot the group: join it again to get the next events
                        await layer.group_add(group, channel)
                    except Exception as exc:
                        logger.warning("stream of thread %s: cannot rejoin its group yet: %s", thread.pk, exc)
                else:
                    yield KEEPALIVE, None
                continue
            if start in done and run_id is None:
                try:
                    run_id = start.result().pk
                except Exception as exc:  # e.g. the draft changed meanwhile and lost its chat trigger
                    yield "error", {"code": "not_started", "message": str(exc) or type(exc).__name__}
                    return
                if not owners.get(run_id):
                    owners[run_id] = True
                    yield "accepted", {"run": run_id, "thread": thread.pk}
            if receive in done:
                event = receive.result()["event"]
                receive = None
                rid = event["data"].get("run")
                if rid not in owners:
                    if run_id is not None:
                        owners[rid] = rid == run_id
                    else:
                        owners[rid] = (await seen.marks(rid)).stream == stream_id
                        if owners[rid]:
                            yield "accepted", {"run": rid, "thread": thread.pk}
                if not owners[rid]:
                    continue
                yield event["type"], event["data"]
                if event["type"] in TERMINAL:
                    return
    finally:
        if receive is not None:
            receive.cancel()
        await layer.group_discard(group, channel)
