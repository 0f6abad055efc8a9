"""The developers' chat API (docs/api.md, docs/streaming.md): a message to a workflow's draft (or
published version) and its reply.

- ``POST /api/workflows/{id}/chat/``: the reply once this message's own turn finished;
- ``POST /api/workflows/{id}/chat/stream/``: the turn's events as Server-Sent Events, the
  transport of the editor's test chat too;
- ``POST /api/workflows/{id}/run/``: the editor's Run button (the draft's ``trigger.manual``).
"""

from __future__ import annotations

import json
from contextlib import aclosing

from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.views import APIView

from chat import services as chat
from participants import services as participants
from runs import services as runs
from runs import threads
from runs.api.deferred import wait_answer
from runs.api.serializers import TurnResultSerializer
from runs.lookups import thread_or_404
from runs.streams import KEEPALIVE, OPEN, turn_feed
from workflows.lookups import workflow_or_404


class ChatInput(serializers.Serializer):
    message = serializers.CharField(max_length=100_000, trim_whitespace=False)
    thread = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=2**63 - 1)
    participant = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="who is talking (at most 200 printable characters): memory keyed by participant follows them across threads",
    )


class ChatView(APIView):
    """Send a message to the draft workflow and get the reply once the turn finished."""

    @extend_schema(request=ChatInput, responses={200: TurnResultSerializer})
    def post(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        data = ChatInput(data=request.data)
        data.is_valid(raise_exception=True)
        thread = None
        if data.validated_data.get("thread"):
            thread = thread_or_404(request, data.validated_data["thread"], workflow=workflow)
        participant = participants.participant_for_call(workflow=workflow, value=data.validated_data.get("participant"))
        run = runs.chat_start(workflow=workflow, message=data.validated_data["message"], thread=thread, participant=participant)
        return wait_answer(request, run, answer="turn", timeout=settings.SKEIN_CHAT_WAIT_S)


class ManualRunInput(serializers.Serializer):
    message = serializers.CharField(max_length=100_000, required=False, allow_blank=True, default="", trim_whitespace=False)


class ManualRunView(APIView):
    """The editor's Run button: run the draft from its ``trigger.manual`` and wait for the result."""

    @extend_schema(request=ManualRunInput, responses={200: TurnResultSerializer})
    def post(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        data = ManualRunInput(data=request.data)
        data.is_valid(raise_exception=True)
        run = runs.manual_start(workflow=workflow, message=data.validated_data["message"])
        return wait_answer(request, run, answer="turn", timeout=settings.SKEIN_CHAT_WAIT_S)


class StreamInput(serializers.Serializer):
    message = serializers.CharField(max_length=100_000, trim_whitespace=False)
    thread = serializers.IntegerField(required=False, allow_null=True, help_text="continue this thread (yours, of this workflow)")
    participant = serializers.JSONField(required=False, allow_null=True, help_text="who is talking (as in /chat/)")
    version = serializers.ChoiceField(
        choices=["draft", "published"], default="draft", help_text="run the draft (like /chat/) or the published version"
    )


SSE_DESCRIPTION = """A `text/event-stream`. Each event is `event: <type>` and `data: <json>`:

- `accepted` `{run, thread}`: first, once the run exists;
- then the run's events (docs/runs.md): `run.started`, `node.started`, `llm.token` `{node, text}`,
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
        version = chat.stream_version(workflow=workflow, version=data.validated_data["version"])
        participant = participants.participant_for_call(workflow=workflow, value=data.validated_data.get("participant"))
        participant = threads.thread_participant(thread=thread, participant=participant)  # refused before streaming
        thread = chat.stream_thread(workflow=workflow, thread=thread, message=message, participant=participant)
        response = StreamingHttpResponse(
            turn_events(version=version, thread=thread, message=message, participant=participant), content_type="text/event-stream"
        )
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # nginx: do not buffer the stream
        return response


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
