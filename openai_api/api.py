"""The OpenAI-compatible endpoint, ``/v1/`` (docs/ecosystem.md#the-openai-compatible-endpoint-v1; rules in ``openai_api/services.py``).

- ``POST /v1/chat/completions``: a turn of a published workflow (``model`` = its id), answered as
  ``chat.completion`` or, with ``stream: true``, ``chat.completion.chunk`` events ending with
  ``data: [DONE]``; the thread's key in ``X-Skein-Thread``;
- ``GET /v1/models``, ``GET /v1/models/{id}``: the caller's published workflows.

``Authorization: Bearer <API token>`` (the token of ``POST /api/auth/token/``). It runs the version
the widget runs (the published one, or ``?version=N`` / ``X-Skein-Version``) and waits like the
other chat endpoints: ``waiting.turn_wait``, or the SSE stream's ``turn_feed``.
"""

from __future__ import annotations

import json
import logging
from contextlib import aclosing

from channels.db import database_sync_to_async
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import transaction
from django.http import JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from accounts.auth import TokenRefused, token_user
from core.errors import UNAVAILABLE
from core.text import BadJSON, parse_json
from observability import tracing as telemetry
from openai_api import services as openai_compat
from openai_api.services import OpenAIError
from runs import events
from runs import services as runs
from runs.api.deferred import register_answer, wait_answer
from runs.limits import spender_caller
from runs.models import Run
from runs.streams import KEEPALIVE, OPEN, turn_feed
from workflows import analysis, selectors, versions

logger = logging.getLogger("skein.api")


def _error_headers(exc: OpenAIError) -> dict:
    headers = dict(exc.headers)
    if not exc.retry:
        headers["x-should-retry"] = "false"  # OpenAI's SDKs would retry 429 and 5xx: another turn
    if exc.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return headers


def _response(exc: OpenAIError) -> JsonResponse:
    response = JsonResponse(exc.body(), status=exc.status)
    for name, value in _error_headers(exc).items():
        response[name] = value
    return response


def completion_answer(run: Run, *, replayed: bool = False, context: dict) -> tuple[int, dict, dict]:
    """A non-streamed completion's answer once its turn ended (or the wait ran out): the
    ``chat.completion``, or the turn's failure as an OpenAI error (``runs/api/deferred.py`` sends it)."""
    headers = {**context["headers"], "X-Skein-Run": str(run.pk)}
    if run.status != Run.Status.SUCCEEDED:
        error = openai_compat.run_error(run)
        return error.status, error.body(), headers | _error_headers(error)
    return 200, openai_compat.completion(run=run, model=context["model"], version_number=context["version"]), headers


def completion_failure(status: int, body: dict, headers: dict) -> tuple[dict, dict]:
    """A failed wait (``runs/api/deferred.py``: a service down, a bug) as an OpenAI error."""
    error = OpenAIError(
        status, body.get("detail") or "the turn did not finish", type="server_error", code=body.get("code"), retry=status == 503
    )
    return error.body(), headers | _error_headers(error)


register_answer("openai", completion_answer, failure=completion_failure)


def openai_view(view):
    """Every answer in OpenAI's shape: refusals, outages (503, Retry-After) and bugs alike."""

    @csrf_exempt  # bearer tokens only: no session, so nothing for a forged page to ride on
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except OpenAIError as exc:
            return _response(exc)
        except RequestDataTooBig:
            return _response(OpenAIError(413, "the request body is too large"))
        except tuple(UNAVAILABLE) as exc:
            service = next(name for kind, name in UNAVAILABLE.items() if isinstance(exc, kind))
            logger.warning("%s is unavailable: %s: %s", service, type(exc).__name__, exc)
            return _response(
                OpenAIError(
                    503,
                    f"{service} is unavailable right now; try again in a moment",
                    type="server_error",
                    code="unavailable",
                    retry=True,
                    headers={"Retry-After": "5"},
                )
            )
        except Exception:
            logger.exception("/v1 request failed")
            return _response(OpenAIError(500, "internal error", type="server_error", code="internal_error"))

    return wrapped


def _caller(request):
    scheme, _, key = request.headers.get("Authorization", "").partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        raise OpenAIError(401, "You didn't provide an API key: send Authorization: Bearer <your Skein API token>.", code="missing_api_key")
    try:
        user, _token = token_user(key)
    except TokenRefused as exc:
        if exc.reason == "expired":
            raise OpenAIError(401, "Your API token expired: get a new one from POST /api/auth/token/.", code="expired_api_key") from None
        raise OpenAIError(401, "Incorrect API key provided. Use the token of POST /api/auth/token/.", code="invalid_api_key") from None
    return user


def _method(request, allowed: str) -> None:
    if request.method != allowed:
        raise OpenAIError(405, f"use {allowed} for this endpoint", code="method_not_allowed")


@openai_view
def chat_completions(request):
    _method(request, "POST")
    owner = _caller(request)
    try:
        data = parse_json(request.body or b"null")
    except BadJSON as exc:
        raise OpenAIError(400, f"the request body is not JSON that Skein reads: {exc}") from None
    chat = openai_compat.request_parse(data)
    workflow = openai_compat.workflow_for_model(owner=owner, model=chat.model)
    version = openai_compat.version_for(
        workflow=workflow, pinned=request.GET.get("version") or request.headers.get(versions.VERSION_HEADER)
    )
    spender = spender_caller(chat.user)
    openai_compat.spend_check(workflow=workflow, spender=spender, input_text=chat.input)
    key = request.headers.get(openai_compat.THREAD_HEADER)
    payload = {"source": "openai", **({"participant": chat.user} if chat.user else {})}
    run_fields = {"spender": spender, "trace_context": telemetry.incoming_traceparent(request.headers)}
    headers = {"X-Skein-Version": str(version.number)}

    participant = openai_compat.participant_for(workflow=workflow, user=chat.user)
    run_fields["participant"] = participant
    if chat.stream:
        with transaction.atomic():
            thread, created = openai_compat.thread_for(workflow=workflow, key=key, title=chat.input, participant=participant)
            if created:
                openai_compat.thread_seed(thread=thread, messages=chat.earlier)
        response = StreamingHttpResponse(
            _chunks(version=version, thread=thread, chat=chat, payload=payload, run_fields=run_fields),
            content_type="text/event-stream",
        )
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        response[openai_compat.THREAD_HEADER] = thread.external_id
        for name, value in headers.items():
            response[name] = value
        return response

    with transaction.atomic():
        thread, created = openai_compat.thread_for(workflow=workflow, key=key, title=chat.input, participant=participant)
        if created:
            openai_compat.thread_seed(thread=thread, messages=chat.earlier)
        run = runs.run_create(version=version, trigger="chat", input_text=chat.input, thread=thread, payload=payload, **run_fields)
    # Waited for without a thread under daphne, like the chat API (runs/api/deferred.py).
    context = {"model": chat.model, "version": version.number, "headers": headers | {openai_compat.THREAD_HEADER: thread.external_id}}
    return wait_answer(request, run, answer="openai", timeout=settings.SKEIN_CHAT_WAIT_S, context=context)


def _sse(data) -> str:
    return f"data: {json.dumps(data, separators=(',', ':'))}\n\n"


async def _chunks(*, version, thread, chat, payload, run_fields):
    """The turn's events as ``chat.completion.chunk`` SSE: the reply's tokens as they come."""
    reply_nodes = analysis.reply_nodes(version)
    outputs = sum(1 for n in version.graph.get("nodes", []) if isinstance(n, dict) and n.get("type") == "output")
    # Tokens go out live when one model writes the reply; otherwise the reply goes out whole.
    live = len(reply_nodes) == 1 and outputs == 1
    run_id, streamed = None, []

    def chunk(delta, finish_reason=None):
        return _sse(
            openai_compat.chunk(
                run_id=run_id or 0, model=chat.model, version_number=version.number, delta=delta, finish_reason=finish_reason
            )
        )

    async with aclosing(turn_feed(version=version, thread=thread, message=chat.input, payload=payload, **run_fields)) as feed:
        async for kind, data in feed:
            if kind == OPEN:
                continue
            if kind == KEEPALIVE:
                yield ": keep-alive\n\n"
            elif kind == "accepted":
                run_id = data["run"]
                yield chunk({"role": "assistant", "content": ""})
            elif kind == events.LLM_TOKEN and live and data.get("node") in reply_nodes and data.get("text"):
                streamed.append(data["text"])
                yield chunk({"content": data["text"]})
            elif kind == events.RUN_FINISHED:
                reply, sent = data.get("reply") or "", "".join(streamed)
                if reply != sent and reply.startswith(sent):
                    yield chunk({"content": reply[len(sent) :]})
                yield chunk({}, "stop")
                if chat.include_usage:
                    run = await database_sync_to_async(Run.objects.get)(pk=run_id)
                    usage = openai_compat.chunk(run_id=run_id, model=chat.model, version_number=version.number, delta={})
                    yield _sse({**usage, "choices": [], "usage": openai_compat.usage_of(run)})
                yield "data: [DONE]\n\n"
                return
            elif kind in (events.RUN_FAILED, "error"):
                if run_id is not None and kind == events.RUN_FAILED:
                    run = await database_sync_to_async(Run.objects.get)(pk=run_id)
                    error = openai_compat.run_error(run)
                else:
                    error = OpenAIError(503, data.get("message") or "the turn did not finish", type="server_error", code=data.get("code"))
                yield _sse(error.body())
                yield "data: [DONE]\n\n"
                return


@openai_view
def models(request):
    _method(request, "GET")
    owner = _caller(request)
    listed = selectors.workflow_published_list(owner=owner)
    return JsonResponse({"object": "list", "data": [openai_compat.model_entry(w) for w in listed]})


@openai_view
def model_detail(request, model: str):
    _method(request, "GET")
    workflow = openai_compat.workflow_for_model(owner=_caller(request), model=model)
    return JsonResponse(openai_compat.model_entry(workflow))


@openai_view
def not_found(request, rest: str = ""):
    _caller(request)
    raise OpenAIError(404, f"Skein has no /v1/{rest[:100]} endpoint: use /v1/chat/completions or /v1/models", code="unknown_url")
