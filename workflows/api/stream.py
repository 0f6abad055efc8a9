"""The streaming chat API: ``POST /api/workflows/{id}/chat/stream/`` answers with Server-Sent Events.

The streaming twin of ``POST /api/workflows/{id}/chat/``, for developers who do not use the
widget, and the transport of the editor's test chat. See docs/streaming.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from contextlib import aclosing

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import APIException
from rest_framework.views import APIView

from workflows import events, participants, streams, widget
from workflows.lookups import thread_or_404, workflow_or_404
from workflows.models import Run

HEARTBEAT_S = 15.0
OPEN, KEEPALIVE = "stream.open", "stream.keepalive"  # turn_feed's own markers, not events
logger = logging.getLogger("skein.realtime")
_starts: set[asyncio.Future] = set()
TERMINAL = (events.RUN_FINISHED, events.RUN_FAILED)


class StreamInput(serializers.Serializer):
    message = serializers.CharField(max_length=100_000, trim_whitespace=False)
    thread = serializers.IntegerField(required=False, allow_null=True, help_text="continue this thread (yours, of this workflow)")
    participant = serializers.JSONField(required=False, allow_null=True, help_text="who is talking (as in /chat/)")
    version = serializers.ChoiceField(
        choices=["draft", "published"], default="draft", help_text="run the draft (like /chat/) or the published version"
    )


class Refused(APIException):
    def __init__(self, error: widget.WidgetError):
        self.status_code = error.status
        super().__init__(detail={"detail": error.message, "code": error.code})


SSE_DESCRIPTION = """A `text/event-stream`. Each event is `event: <type>` and `data: <json>`:

- `accepted` `{run, thread}`: first, once the run exists;
- then the run's events (DESIGN.md §5): `run.started`, `node.started`, `llm.token` `{node, text}`,
  `node.finished`, `memory.summarizing`, `memory.summarized`, `memory.warning`;
- last `run.finished` `{run, reply, warnings}` or `run.failed` `{run, error}`, and the stream ends.

`error` `{code, message}` ends the stream early (e.g. `timeout`). Lines starting with `:` are
keep-alive comments. Tokens arrive in order; concatenated, the `llm.token` texts of the node that
feeds the output are the reply.
"""


class ChatStreamView(APIView):
    """Send a message and receive the turn's events as they happen (Server-Sent Events)."""

    @extend_schema(
        request=StreamInput,
        responses={
            (200, "text/event-stream"): OpenApiResponse(
                response={"type": "string"},
                description=SSE_DESCRIPTION,
                examples=[
                    OpenApiExample(
                        "a turn",
                        value=(
                            'event: accepted\ndata: {"run": 7, "thread": 3}\n\n'
                            'event: run.started\ndata: {"run": 7, "trigger": "chat", "thread": 3}\n\n'
                            'event: llm.token\ndata: {"run": 7, "node": "agent", "text": "Hello"}\n\n'
                            'event: run.finished\ndata: {"run": 7, "reply": "Hello", "warnings": []}\n\n'
                        ),
                        media_type="text/event-stream",
                    )
                ],
            ),
            400: OpenApiResponse(description="invalid input or an invalid draft (`errors`)"),
            404: OpenApiResponse(description="no such workflow or thread"),
            409: OpenApiResponse(description="`version: published` and nothing is published"),
        },
    )
    def post(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        data = StreamInput(data=request.data)
        data.is_valid(raise_exception=True)
        message = data.validated_data["message"]
        thread = None
        if data.validated_data.get("thread"):
            thread = thread_or_404(request, data.validated_data["thread"], workflow=workflow)
        try:
            version = streams.stream_version(workflow=workflow, version=data.validated_data["version"])
        except widget.WidgetError as exc:
            raise Refused(exc) from None
        participant = participants.participant_for_call(workflow=workflow, value=data.validated_data.get("participant"))
        participant = participants.thread_participant(thread=thread, participant=participant)  # refused before streaming
        thread = streams.stream_thread(workflow=workflow, thread=thread, message=message, participant=participant)
        response = StreamingHttpResponse(
            turn_events(version=version, thread=thread, message=message, participant=participant), content_type="text/event-stream"
        )
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # nginx: do not buffer the stream
        return response


def run_ending(*, run_id: int) -> tuple[str, dict] | None:
    """A run's last event, from the database, once it ended (``run.finished`` or ``run.failed``)."""
    run = Run.objects.filter(pk=run_id).only("status", "output", "error", "warnings").first()
    if run is None or not run.is_done:
        return None
    if run.status == Run.Status.SUCCEEDED:
        cut = run.steps.filter(type="output", details__cut=True).exists()
        return events.RUN_FINISHED, {"run": run.pk, "reply": run.output, "warnings": run.warnings, "cut": cut}
    return events.RUN_FAILED, {"run": run.pk, "error": run.error}


def sse(event_type: str, data: dict) -> str:
    return f"event: {event_type}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


async def turn_events(*, version, thread, message: str, timeout: float | None = None, participant=None):
    """Subscribe to the thread, start the run, and yield its events as SSE until it ends."""
    async with aclosing(turn_feed(version=version, thread=thread, message=message, timeout=timeout, participant=participant)) as feed:
        async for event_type, data in feed:
            if event_type == OPEN:
                yield ": stream open\n\n"
            elif event_type == KEEPALIVE:
                yield ": keep-alive\n\n"
            else:
                yield sse(event_type, data)


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
        database_sync_to_async(streams.stream_run_start, thread_sensitive=False, executor=streams.turn_executor)(
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
    seen = streams.ConnectionRuns()
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
