"""Waiting for a turn without a thread: the chat API's, the webhook's and ``/v1``'s bounded waits
under daphne.

A request that waits for a turn inside a view holds its view thread however it waits. Under
daphne a view instead answers at once with a *deferred wait*: an empty
response carrying the run and how its answer is made (``wait_answer``). ``DeferredWaits``, the
ASGI application around Django's, holds that response back, lets the request's thread go, waits
for the run asynchronously (``waiting.turn_wait_async``: no thread, no database connection), then
sends the response with its body: the status and headers Django's middleware gave it, plus the
answer's own (the run's outcome rides on its signal, ``waiting.signal_run_done``). A thousand
waiting callers cost a thousand small coroutines. Each endpoint registers how its answer is made
(``register_answer``): ``/v1`` answers in OpenAI's shape, its failures too.

Outside daphne (the test client, a WSGI server) the view waits itself, as before.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from asgiref.sync import sync_to_async
from django.db import connection
from django.http import HttpResponse
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from core.backends import backend
from core.errors import unavailable_answer
from runs import waiting
from runs.api.serializers import TurnResultSerializer
from runs.models import Run

logger = logging.getLogger("skein.api")

SCOPE_KEY = "skein.deferred_waits"  # set on the ASGI scope by DeferredWaits
HEADER = b"x-skein-deferred-wait"  # the view's note to DeferredWaits, never sent to the client


Answer = Callable[..., tuple[int, dict, dict]]  # (run, *, replayed, context) -> (status, body, headers)


def turn_answer(run: Run, *, replayed: bool = False, context: dict) -> tuple[int, dict, dict]:
    """The chat API's answer: the run's outcome (or its state when the wait ran out)."""
    return 200, TurnResultSerializer(run).data, {}


def hook_answer(run: Run, *, replayed: bool = False, context: dict) -> tuple[int, dict, dict]:
    """The webhook's ``?wait=1`` answer: the outcome once done, else 202 with the run."""
    if run.is_done:
        return 200, TurnResultSerializer(run).data, {}
    return 202, {"run": run.pk, "thread": run.thread_id, "status": run.status}, {} if not replayed else {"Idempotent-Replayed": "true"}


ANSWERS: dict[str, Answer] = {"turn": turn_answer, "hook": hook_answer}


# How an answer says that its wait failed (a backing service down, a bug), when not as
# ``{"detail", "code"}``: (status, that body, headers) -> (body, headers).
FAILURES: dict[str, Callable[[int, dict, dict], tuple[dict, dict]]] = {}


def register_answer(name: str, answer: Answer, *, failure: Callable[[int, dict, dict], tuple[dict, dict]] | None = None) -> None:
    """An answer made by another API module (the OpenAI-compatible endpoint's), in its own shape."""
    ANSWERS[name] = answer
    if failure is not None:
        FAILURES[name] = failure


def wait_answer(request, run: Run, *, answer: str, timeout: float, replayed: bool = False, context: dict | None = None):
    """The view's response for a request that waits for ``run``: deferred under daphne, else
    waited for here (``waiting.turn_wait``). ``context`` (JSON) is handed to the answer."""
    context = context or {}
    if backend().turns_in_request and not run.is_done:
        # The embedded mode ran the turn as the run was committed, unless it queued behind another
        # turn of its thread: answered here at once rather than after a deferred wait's round.
        run.refresh_from_db()
    if run.is_done or not getattr(request, "scope", {}).get(SCOPE_KEY):
        status, body, headers = ANSWERS[answer](waiting.turn_wait(run=run, timeout=timeout), replayed=replayed, context=context)
        if isinstance(request, Request):  # a DRF view: its renderer and test client read .data
            return Response(body, status=status, headers=headers)
        return HttpResponse(JSONRenderer().render(body), status=status, headers=headers, content_type="application/json")
    note = json.dumps({"answer": answer, "run": run.pk, "timeout": timeout, "replayed": replayed, "context": context})
    response = HttpResponse(status=200, content_type="application/json")
    response[HEADER.decode()] = note
    return response


def _answer(note: dict) -> tuple[int, dict, bytes]:
    try:
        run = Run.objects.get(pk=note["run"])
        status, body, headers = ANSWERS[note["answer"]](run, replayed=note["replayed"], context=note["context"])
        return status, headers, JSONRenderer().render(body)
    finally:
        if connection.vendor == "postgresql" and not connection.in_atomic_block:
            connection.close()


_answer_async = sync_to_async(_answer, thread_sensitive=True)  # outside a request: one shared thread


class DeferredWaits:
    """The ASGI application around Django's that serves deferred waits (see the module's doc)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        held: dict = {}

        async def hold_back(message):
            if message["type"] == "http.response.start" and "start" not in held:
                notes = [value for name, value in message.get("headers", []) if name.lower() == HEADER]
                if notes:
                    held["start"] = message
                    held["note"] = json.loads(notes[0])
                    return
            if "start" in held:
                return  # the deferred response's empty body
            await send(message)

        await self.app({**scope, SCOPE_KEY: True}, receive, hold_back)
        if "start" not in held:
            return
        note = held["note"]
        try:
            run = await waiting.turn_wait_async(run_id=note["run"], timeout=note["timeout"])
            if run is None:  # the bound ran out: the run as it is now
                status, extra, body = await _answer_async(note)
            else:
                status, payload, extra = ANSWERS[note["answer"]](run, replayed=note["replayed"], context=note["context"])
                body = JSONRenderer().render(payload)
        except Exception as exc:
            unavailable = unavailable_answer(exc)
            if unavailable is None:  # a bug: said in JSON, like every other error
                logger.exception("deferred wait for run %s", note["run"])
                unavailable = {"detail": f"internal error: {type(exc).__name__}"}, {}
                status = 500
            else:
                status = 503
            payload, extra = unavailable
            if note["answer"] in FAILURES:
                payload, extra = FAILURES[note["answer"]](status, payload, extra)
            body = JSONRenderer().render(payload)
        headers = [(name, value) for name, value in held["start"].get("headers", []) if name.lower() not in (HEADER, b"content-length")]
        headers += [(name.lower().encode(), str(value).encode()) for name, value in extra.items()]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
