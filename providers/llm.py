"""Every model call goes through here, and through litellm.

Streaming, with a timeout and retries on transient errors before the first token; a model error
becomes a ``NodeError`` with a clear message.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from functools import lru_cache

from django.conf import settings

from engine.interfaces import LLMResult, ModelRef, ToolCall
from engine.registry import NodeError

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
import litellm  # noqa: E402

from core import netguard  # noqa: E402
from providers import local_model  # noqa: E402

logger = logging.getLogger("skein.llm")
litellm.suppress_debug_info = True
litellm.drop_params = True
# litellm's per-chunk success logging (a thread task per chunk) feeds callbacks Skein does not use:
# usage and cost are recorded from the stream itself. Off, a streamed call costs a fifth less CPU.
litellm.disable_streaming_logging = True
local_model.register()  # the bundled model: "skein-local/<model>", loaded on first use
# Every request litellm makes through the OpenAI SDK goes through the address guard (no redirects).
litellm.client_session = netguard.http_client()

TRANSIENT = (
    litellm.APIConnectionError,
    litellm.RateLimitError,
    litellm.InternalServerError,
    litellm.ServiceUnavailableError,
    litellm.BadGatewayError,
    litellm.Timeout,
)


def litellm_target(ref: ModelRef, provider) -> dict:
    """The model string and connection arguments litellm needs for a model on a provider.

    Keys: a provider's stored key, else litellm reads the kind's environment variable
    (OPENAI_API_KEY, ANTHROPIC_API_KEY) -- but only for the kind's own endpoint: a provider with
    its own ``api_base`` and no stored key never receives the operator's environment key."""
    if provider is None:
        return {"model": ref.model}
    kind, model = provider.kind, ref.model
    if kind == "local":
        return {"model": f"{local_model.PROVIDER}/{model.removeprefix(local_model.PROVIDER + '/')}"}
    args: dict = {}
    if provider.api_base:
        args["api_base"] = provider.api_base
    key = provider.api_key
    if not key and provider.api_base and kind in ("openai", "anthropic"):
        key = "none"  # never send an environment key to a base URL someone typed in
    if kind == "openai":
        args["model"] = model if model.startswith("openai/") else f"openai/{model}"
    elif kind == "anthropic":
        args["model"] = model if model.startswith("anthropic/") else f"anthropic/{model}"
    elif kind == "ollama":
        args["model"] = model if model.startswith("ollama") else f"ollama_chat/{model}"
        args.setdefault("api_base", settings.SKEIN_OLLAMA_API_BASE)
    elif kind == "openai_compatible":
        args["model"] = f"openai/{model}"
        key = key or "none"  # litellm insists on some key, even for servers that need none
    else:
        raise NodeError(f"provider kind '{kind}' is not supported")
    if key:
        args["api_key"] = key
    return args


def supports_response_schema(ref: ModelRef, provider) -> bool:
    """Whether ``complete(..., response_format={"type": "json_schema", ...})`` is honoured: by the
    bundled model always (a llama.cpp grammar built from the schema), by others as litellm knows
    them (a model it does not know: no)."""
    model = litellm_target(ref, provider)["model"]
    if model.startswith(local_model.PROVIDER + "/"):
        return True
    try:
        return bool(litellm.supports_response_schema(model=model))
    except Exception:  # models litellm does not know
        return False


def complete(
    ref: ModelRef,
    provider,
    messages: list[dict],
    *,
    on_token: Callable[[str], None] | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    response_format: dict | None = None,
    deadline: float | None = None,
    tools: list[dict] | None = None,
    tool_choice: str | None = None,
) -> LLMResult:
    """One model call, streamed. ``timeout`` bounds each attempt; ``deadline`` (a
    ``time.monotonic()`` instant) bounds the whole call, retries included: no request is sent
    after it, and an attempt in flight gives up at it. ``response_format`` asks for structured
    output (OpenAI's shape; see ``supports_response_schema``; on the bundled model a grammar,
    ``local_model.structured_grammar``). ``tools`` (OpenAI's format) are functions the model may
    call: the calls it asks for are the result's ``tool_calls``."""
    require_credentials(ref, provider)
    timeout = settings.SKEIN_LLM_TIMEOUT_S if timeout is None else timeout
    retries = settings.SKEIN_LLM_RETRIES if retries is None else retries
    target = litellm_target(ref, provider)
    # Retries are ours (below), counted once: the provider SDK's own retries are turned off.
    kwargs = dict(target, messages=messages, stream=True, stream_options={"include_usage": True}, max_retries=0)
    if not target["model"].startswith(local_model.PROVIDER + "/"):
        # Known prices spare litellm its own search of the price map on every response.
        kwargs["input_cost_per_token"], kwargs["output_cost_per_token"] = _prices(target["model"])
    kwargs.update(netguard.litellm_kwargs(target["model"]))
    if ref.temperature is not None:
        kwargs["temperature"] = ref.temperature
    if ref.max_tokens is not None:
        kwargs["max_tokens"] = ref.max_tokens
    if response_format is not None:  # structured output (callers ask only models that supports_response_schema)
        kwargs["response_format"] = response_format
    if tools:
        kwargs["tools"] = tools
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice

    attempt = 0
    while True:
        attempt += 1
        budget = timeout if deadline is None else min(timeout, deadline - time.monotonic())
        if budget <= 0:
            expired = litellm.Timeout(message="no answer within the bound", model=target["model"], llm_provider="")
            raise NodeError(describe_error(expired, ref)) from expired
        try:
            return _stream({**kwargs, "timeout": budget}, ref, target["model"], on_token, budget)
        except _Streamed as exc:  # failed after tokens reached the participant: no silent retry
            raise NodeError(describe_error(exc.cause, ref)) from exc.cause
        except TRANSIENT as exc:
            delay = min(0.5 * 2 ** (attempt - 1), 4.0)
            if attempt > retries or (deadline is not None and time.monotonic() + delay >= deadline):
                raise NodeError(describe_error(exc, ref)) from exc
            logger.warning("model %s: transient error (%s), retry %d in %.1fs", ref.model, type(exc).__name__, attempt, delay)
            time.sleep(delay)
        except litellm.exceptions.APIError as exc:
            raise NodeError(describe_error(exc, ref)) from exc
        except Exception as exc:  # litellm raises many types; every one must fail the step clearly
            raise NodeError(describe_error(exc, ref)) from exc


class _Streamed(Exception):
    def __init__(self, cause: Exception):
        super().__init__(str(cause))
        self.cause = cause


def _stream(kwargs, ref: ModelRef, model: str, on_token, timeout: float) -> LLMResult:
    deadline = time.monotonic() + timeout
    response = litellm.completion(**kwargs)
    parts: list[str] = []
    calls: dict[int, dict] = {}  # a tool call's pieces, by its index in the answer
    usage = None
    finish_reason = ""
    try:
        for chunk in response:
            if time.monotonic() > deadline:
                raise litellm.Timeout(message=f"no complete answer within {timeout:.0f}s", model=model, llm_provider="")
            if getattr(chunk, "usage", None):
                usage = chunk.usage
            choices = getattr(chunk, "choices", None) or []
            if choices and getattr(choices[0], "finish_reason", None):
                finish_reason = str(choices[0].finish_reason)
            delta = choices[0].delta.content if choices and choices[0].delta else None
            if delta:
                parts.append(delta)
                if on_token:
                    on_token(delta)
            for piece in (getattr(choices[0].delta, "tool_calls", None) or []) if choices and choices[0].delta else ():
                _call_piece(calls, piece)
            if usage is not None and finish_reason:
                _drain(response)  # the answer is complete: what is left is the stream's end marker
                break
    except Exception as exc:
        if parts:
            raise _Streamed(exc) from exc
        raise
    finally:
        _close(response)
    text = "".join(parts)
    tool_calls = [
        ToolCall(id=c["id"] or f"call_{index}", name=c["name"], arguments=c["arguments"] or "{}") for index, c in sorted(calls.items())
    ]
    prompt_tokens = getattr(usage, "prompt_tokens", 0) or 0
    completion_tokens = getattr(usage, "completion_tokens", 0) or 0
    if usage is None:  # a server that ignores stream_options: count with the model's tokenizer instead
        prompt_tokens, completion_tokens = _count(model, kwargs["messages"], text)
    local = model.startswith(local_model.PROVIDER + "/")
    return LLMResult(
        text=text,
        model=ref.model,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost=0.0 if local else _cost(model, prompt_tokens, completion_tokens),
        finish_reason=finish_reason,
        tool_calls=tool_calls,
    )


def _call_piece(calls: dict[int, dict], piece) -> None:
    """One streamed piece of a tool call: its id and name come once, its arguments in parts."""
    index = getattr(piece, "index", None)
    index = len(calls) if index is None else index
    call = calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
    if getattr(piece, "id", None):
        call["id"] = piece.id
    function = getattr(piece, "function", None)
    if function is not None:
        if getattr(function, "name", None):
            call["name"] = function.name
        if getattr(function, "arguments", None):
            call["arguments"] += function.arguments


DRAIN_LIMIT = 8  # items left after a complete answer that are read rather than cut off


def _drain(response) -> None:
    """Read the rest of a complete answer's stream below litellm's wrapper, so that the connection
    goes back to the pool. Letting the wrapper reach the end would cost ~3 ms of CPU per call for
    Skein's nothing: it rebuilds the whole response from its chunks, prices it again and runs its
    success logging, while the text, usage and cost were taken from the stream already. A stream
    that goes on (a server that keeps talking) is closed instead."""
    rest = getattr(response, "completion_stream", None)
    if rest is None:
        return
    try:
        for index, _item in enumerate(rest):
            if index >= DRAIN_LIMIT:
                break
    except Exception:  # the answer is complete; only the connection's reuse is at stake
        pass


def _close(response) -> None:
    """Stop a stream we no longer read: frees the HTTP connection, or the local model's lock."""
    for stream in (getattr(response, "completion_stream", None), response):
        close = getattr(stream, "close", None)
        if callable(close):
            try:
                close()
            except Exception:  # closing is best effort
                pass


def _count(model: str, messages: list[dict], text: str) -> tuple[int, int]:
    try:
        return litellm.token_counter(model=model, messages=messages), litellm.token_counter(model=model, text=text)
    except Exception:
        return 0, 0


@lru_cache(maxsize=1024)
def _prices(model: str) -> tuple[float, float]:
    """Per-token (prompt, completion) prices from litellm's price map, looked up once per model;
    models it does not know (custom servers) cost nothing known: 0."""
    try:
        info = litellm.get_model_info(model)
    except Exception:
        return 0.0, 0.0
    return float(info.get("input_cost_per_token") or 0.0), float(info.get("output_cost_per_token") or 0.0)


def _cost(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    prompt_price, completion_price = _prices(model)
    return prompt_tokens * prompt_price + completion_tokens * completion_price


# What went wrong, in words a person can act on: (exception types, explanation).
_REASONS: tuple[tuple[tuple[type[Exception], ...], str, str], ...] = (
    ((litellm.AuthenticationError,), "auth", "the provider rejected the API key (check the key)"),
    ((litellm.PermissionDeniedError,), "auth", "the API key is not allowed to use this model"),
    ((litellm.NotFoundError,), "unknown_model", "the provider does not know this model (check the model name and the base URL)"),
    ((litellm.ContextWindowExceededError,), "too_long", "the conversation is longer than the model's context window"),
    ((litellm.RateLimitError,), "rate_limited", "the provider is rate limiting (or the account is out of credit)"),
    ((litellm.Timeout,), "timeout", "timed out"),
    ((litellm.BadRequestError,), "bad_request", "the provider refused the request"),
)
_UNREACHABLE = (
    "connection error",
    "connection refused",
    "connecterror",
    "name or service not known",
    "nodename nor servname",
    "failed to establish",
    "cannot connect",
    "all connection attempts failed",
    "no route to host",
    "temporary failure in name resolution",
)


def error_reason(exc: Exception) -> tuple[str, str]:
    """(code, explanation) for a model error: auth, unknown_model, unreachable, timeout, ..."""
    refused = netguard.is_refusal(exc)
    if refused is not None:
        return "refused_address", f"the provider's address is refused ({refused})"
    text = _message(exc).lower()
    if isinstance(exc, litellm.Timeout) or "timed out" in text or "timeout" in type(exc).__name__.lower():
        return "timeout", "timed out"
    for types, code, explanation in _REASONS:
        if isinstance(exc, types):
            return code, explanation
    if isinstance(exc, (litellm.APIConnectionError, litellm.InternalServerError)) and any(s in text for s in _UNREACHABLE):
        return "unreachable", "could not connect to the provider (is the base URL right and the server running?)"
    if isinstance(exc, local_model.LocalModelUnavailable):
        return "unavailable", "the local model is not available"
    return "error", "the call failed"


def _message(exc: Exception) -> str:
    """litellm's message without its repeated class-name and provider prefixes."""
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    message = message.replace("litellm.", "")
    while True:
        head, sep, rest = message.partition(": ")
        if sep and head.replace("_", "").isalnum() and (head.endswith("Error") or head.endswith("Exception") or head == "Timeout"):
            message = rest
            continue
        break
    for prefix in ("OpenAIException - ", "AnthropicException - ", "Ollama_chatException - ", "OllamaException - "):
        message = message.replace(prefix, "")
    return message.split(" Handle with `")[0].strip()


def describe_error(exc: Exception, ref: ModelRef) -> str:
    """One line a person can act on: the reason, what to do, and the start of the provider's own words."""
    _code, explanation = error_reason(exc)
    return f"model '{ref.model}' failed: {explanation}: {one_line(_message(exc))}"


def one_line(text: str, limit: int = 300) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


# --- credentials, and what a provider serves ------------------------------------------------------
# The environment variable litellm reads for a kind's own endpoint (settings.py explains the rules).
ENVIRONMENT_KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def credentials_problem(*, model: str, provider) -> str | None:
    """Why a call of ``model`` (on ``provider``, or with environment keys when None) would have no
    usable credentials, with what to do; None when nothing is missing. Checked when a workflow is
    saved and again before each call, so a missing key never reaches litellm."""
    if provider is not None:
        variable = ENVIRONMENT_KEYS.get(provider.kind)
        if variable and not provider.api_base and not provider.has_api_key and not os.environ.get(variable):
            return f"the provider '{provider.name}' has no API key: add one on the Providers page or set {variable}"
        return None
    if model.startswith(local_model.PROVIDER + "/"):
        return None
    try:
        litellm.get_llm_provider(model)
    except Exception:
        return (
            f"no provider is chosen and litellm does not know which service serves '{model}': "
            f"choose a provider (or name the service, as in 'openai/{model}')"
        )
    try:
        missing = litellm.validate_environment(model).get("missing_keys") or []
    except Exception:
        return None
    keys = [name for name in missing if name.endswith(("_KEY", "_TOKEN"))]
    if keys:
        return f"no API key for '{model}': add a provider on the Providers page or set {' or '.join(keys)}"
    return None


def require_credentials(ref: ModelRef, provider) -> None:
    """Fail a call that has no usable key before litellm does (in its own words, retried as if
    transient): the reason and what to do, as an authentication error (reason ``auth``)."""
    problem = credentials_problem(model=ref.model, provider=provider)
    if problem:
        cause = litellm.AuthenticationError(message=problem, llm_provider="", model=ref.model)
        raise NodeError(f"model '{ref.model}' cannot be called: {problem}") from cause
