"""The OpenAI-compatible chat endpoint's rules (docs/ecosystem.md#the-openai-compatible-endpoint-v1; views in ``openai_api/api.py``).

``model`` is a published workflow's id; the last user message is the turn's input. A request
without ``X-Skein-Thread`` starts a new thread whose global history is seeded with the request's
earlier user and assistant messages (stateless clients resend the whole conversation each time);
with the header, the thread of that key continues and the earlier messages are not added again (a
key not seen before starts a thread of that key, seeded the same way). System messages are not
seeded: the workflow's own prompts decide what its models are told. Errors are OpenAI's shape,
``{"error": {"message", "type", "param", "code"}}``.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError

from memory import services as memory_services
from memory.keys import thread_key
from participants import services as participants
from runs import limits, threads
from runs.models import Thread
from workflows import selectors, versions
from workflows.models import Workflow, WorkflowVersion

THREAD_HEADER = "X-Skein-Thread"
MAX_MESSAGES = 1000
MAX_INPUT_CHARS = 100_000
MAX_THREAD_KEY = 200


class OpenAIError(Exception):
    """An answer in OpenAI's error shape. ``retry`` False tells OpenAI's SDKs not to send the
    request again (it would start another turn)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
        retry: bool = False,
        headers: dict | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.type, self.code, self.param = status, message, type, code, param
        self.retry = retry
        self.headers = headers or {}

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


# --- the request ----------------------------------------------------------------------------------
class _ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: StrictStr
    text: StrictStr | None = None


class _Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: StrictStr | list[_ContentPart] | None = None
    name: StrictStr | None = Field(None, max_length=200)


class _StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    include_usage: StrictBool = False


class _Request(BaseModel):
    """Fields other than these (temperature, max_tokens, ...) are accepted and left to the
    workflow, whose nodes carry their own settings."""

    model_config = ConfigDict(extra="allow")
    model: StrictStr = Field(max_length=100)
    messages: list[_Message] = Field(max_length=MAX_MESSAGES)
    stream: StrictBool | None = False
    stream_options: _StreamOptions | None = None
    n: StrictInt | None = None
    user: StrictStr | None = Field(None, max_length=200)
    tools: list[Any] | None = None
    functions: list[Any] | None = None
    tool_choice: Any = None
    function_call: Any = None


@dataclass
class ChatRequest:
    model: str
    input: str
    earlier: list[dict] = field(default_factory=list)  # user and assistant messages before the input
    stream: bool = False
    include_usage: bool = False
    user: str | None = None


def request_parse(data: Any) -> ChatRequest:
    """A checked request, or ``OpenAIError`` 400 saying what is wrong (and where: ``param``)."""
    if not isinstance(data, dict):
        raise OpenAIError(400, "the request body must be a JSON object")
    try:
        request = _Request.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise OpenAIError(400, f"{where}: {first['msg']}" if where else first["msg"], param=where or None) from None
    if request.tools or request.functions or request.tool_choice not in (None, "none") or request.function_call not in (None, "none"):
        raise OpenAIError(
            400,
            "tools and function calling are not supported: a Skein workflow decides what it calls",
            param="tools",
            code="tools_not_supported",
        )
    if request.n not in (None, 1):
        raise OpenAIError(400, "n must be 1: a workflow gives one answer per turn", param="n")
    if not request.messages:
        raise OpenAIError(400, "messages must contain at least one message", param="messages")
    texts = []
    for index, message in enumerate(request.messages):
        if message.role in ("tool", "function") or getattr(message, "tool_calls", None):
            raise OpenAIError(400, "tool messages are not supported", param=f"messages.{index}", code="tools_not_supported")
        texts.append(_text(message, index))
    users = [i for i, m in enumerate(request.messages) if m.role == "user"]
    if not users:
        raise OpenAIError(400, "messages must contain a user message: the last one is the turn's input", param="messages")
    last = users[-1]
    text = texts[last]
    if not text.strip():
        raise OpenAIError(400, "the last user message is empty", param=f"messages.{last}.content")
    if len(text) > MAX_INPUT_CHARS:
        raise OpenAIError(400, f"the last user message is longer than {MAX_INPUT_CHARS} characters", param=f"messages.{last}.content")
    earlier = [
        {"role": m.role, "content": texts[i]} for i, m in enumerate(request.messages[:last]) if m.role in ("user", "assistant") and texts[i]
    ]
    return ChatRequest(
        model=request.model,
        input=text,
        earlier=earlier,
        stream=bool(request.stream),
        include_usage=bool(request.stream_options and request.stream_options.include_usage),
        user=request.user or None,
    )


def _text(message: _Message, index: int) -> str:
    if message.content is None:
        return ""
    if isinstance(message.content, str):
        text = message.content
    else:
        parts = []
        for part in message.content:
            if part.type != "text" or part.text is None:
                raise OpenAIError(400, f"only text content is supported (a '{part.type[:40]}' part)", param=f"messages.{index}.content")
            parts.append(part.text)
        text = "\n".join(parts)
    if "\x00" in text:
        raise OpenAIError(400, "NUL characters (\\u0000) are not allowed", param=f"messages.{index}.content")
    return text


# --- what the request names -----------------------------------------------------------------------
def model_not_found(model: str) -> OpenAIError:
    return OpenAIError(
        404, f"The model `{model[:100]}` does not exist or you do not have access to it.", code="model_not_found", param="model"
    )


def workflow_for_model(*, owner, model: str) -> Workflow:
    """The caller's published workflow whose id ``model`` is; anyone else's is "not found"."""
    text = model.strip()
    workflow = selectors.workflow_get(owner=owner, workflow_id=int(text)) if text.isdigit() and len(text) <= 18 else None
    if workflow is None:
        raise model_not_found(model)
    if workflow.published_version_id is None:
        raise OpenAIError(
            404, f"workflow {workflow.pk} is not published yet: publish it to call it as a model", code="model_not_found", param="model"
        )
    return workflow


def version_for(*, workflow: Workflow, pinned) -> WorkflowVersion:
    try:
        version = versions.version_pinned(workflow=workflow, value=pinned)
    except versions.BadVersion as exc:
        raise OpenAIError(400, str(exc), param="version") from None
    except versions.VersionNotFound as exc:
        raise OpenAIError(404, str(exc), code="version_not_found", param="version") from None
    if not any(isinstance(n, dict) and n.get("type") == "trigger.chat" for n in (version.graph or {}).get("nodes", [])):
        raise OpenAIError(
            400, f"version {version.number} of workflow {workflow.pk} has no chat trigger", code="no_chat_trigger", param="model"
        )
    return version


def spend_check(*, workflow: Workflow, spender: str, input_text: str) -> None:
    """Refuse at once (429) a turn the day's spend limit would refuse anyway."""
    refused = limits.refusal(workflow=workflow, spender=spender, input_text=input_text)
    if refused is not None:
        raise OpenAIError(429, refused.message, type="insufficient_quota", code="spend_limit_reached")


def participant_for(*, workflow: Workflow, user: str | None):
    """The request's ``user`` is the participant (memory keyed by participant follows them)."""
    try:
        return participants.participant_for_call(workflow=workflow, value=user)
    except participants.ParticipantInvalid as exc:
        raise OpenAIError(400, exc.message.replace("'participant'", "user"), param="user", code=exc.code) from None


def thread_for(*, workflow: Workflow, key: str | None, title: str, participant=None) -> tuple[Thread, bool]:
    """The thread of ``key`` (created if new), or a new thread with a fresh key; (thread, created).
    A thread of another participant than ``user`` is refused."""
    if key is None:
        thread = threads.thread_create(
            workflow=workflow, first_message=title, external_id="thr_" + secrets.token_urlsafe(18), participant=participant
        )
        return thread, True
    key = key.strip()
    if not key or len(key) > MAX_THREAD_KEY or not key.isprintable():
        raise OpenAIError(400, f"{THREAD_HEADER} must be 1 to {MAX_THREAD_KEY} printable characters", param=THREAD_HEADER)
    thread, created = threads.thread_for_key(workflow=workflow, key=key, first_message=title, participant=participant)
    try:
        threads.thread_participant(thread=thread, participant=participant)
    except threads.ParticipantMismatch as exc:
        raise OpenAIError(409, f"{THREAD_HEADER} {key[:80]}: {exc.message}", param="user", code=exc.code) from None
    return thread, created


def thread_seed(*, thread: Thread, messages: list[dict]) -> None:
    """A new thread's global history starts with the conversation the client sent."""
    if not messages:
        return
    history = memory_services.history_get_or_create(workflow_id=thread.workflow_id, kind="global", name="", key=thread_key(thread.pk))
    memory_services.history_append(history=history, messages=messages)


# --- the answer -----------------------------------------------------------------------------------
def completion_id(run_id: int) -> str:
    return f"chatcmpl-skein-{run_id}"


def usage_of(run) -> dict:
    return {
        "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens,
        "total_tokens": run.prompt_tokens + run.completion_tokens,
    }


def completion(*, run, model: str, version_number: int) -> dict:
    return {
        "id": completion_id(run.pk),
        "object": "chat.completion",
        "created": int(run.created.timestamp()),
        "model": model,
        "system_fingerprint": f"skein-v{version_number}",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": run.output}, "logprobs": None, "finish_reason": "stop"}],
        "usage": usage_of(run),
    }


def chunk(
    *, run_id: int, model: str, version_number: int, delta: dict, finish_reason: str | None = None, created: int | None = None
) -> dict:
    return {
        "id": completion_id(run_id),
        "object": "chat.completion.chunk",
        "created": created or int(time.time()),
        "model": model,
        "system_fingerprint": f"skein-v{version_number}",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }


def run_error(run) -> OpenAIError:
    """A turn that did not give an answer, as an OpenAI error."""
    if not run.is_done:
        return OpenAIError(
            503, f"the turn did not finish in time (run {run.pk} goes on; see it in Skein)", type="server_error", code="timeout"
        )
    if limits.is_refusal(run.error):
        return OpenAIError(429, run.error, type="insufficient_quota", code="spend_limit_reached")
    return OpenAIError(502, f"the workflow's run {run.pk} failed: {run.error}"[:4000], type="server_error", code="run_failed")


def model_entry(workflow: Workflow) -> dict:
    return {
        "id": str(workflow.pk),
        "object": "model",
        "created": int(workflow.created.timestamp()),
        "owned_by": workflow.owner.username,
        "name": workflow.name,
    }
