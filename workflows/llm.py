"""Every model call goes through here, and through litellm.

Streaming, with a timeout and retries on transient errors before the first token; a model error
becomes a ``NodeError`` with a clear message.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

from django.conf import settings

from workflows.engine.registry import NodeError
from workflows.engine.services import LLMResult, ModelRef

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
import litellm  # noqa: E402

logger = logging.getLogger("skein.llm")
litellm.suppress_debug_info = True
litellm.drop_params = True

TRANSIENT = (
    litellm.APIConnectionError,
    litellm.RateLimitError,
    litellm.InternalServerError,
    litellm.ServiceUnavailableError,
    litellm.BadGatewayError,
    litellm.Timeout,
)


def litellm_target(ref: ModelRef, provider) -> dict:
    """The model string and connection arguments litellm needs for a model on a provider."""
    if provider is None:
        return {"model": ref.model}
    kind, model = provider.kind, ref.model
    args: dict = {}
    if provider.api_base:
        args["api_base"] = provider.api_base
    key = provider.api_key
    if kind == "openai":
        args["model"] = model if model.startswith("openai/") else f"openai/{model}"
    elif kind == "anthropic":
        args["model"] = model if model.startswith("anthropic/") else f"anthropic/{model}"
    elif kind == "ollama":
        args["model"] = model if model.startswith("ollama") else f"ollama_chat/{model}"
        args.setdefault("api_base", "http://127.0.0.1:11434")
    elif kind == "openai_compatible":
        args["model"] = f"openai/{model}"
        key = key or "none"  # litellm insists on some key, even for servers that need none
    else:
        raise NodeError(f"provider kind '{kind}' is not supported")
    if key:
        args["api_key"] = key
    return args


def complete(
    ref: ModelRef,
    provider,
    messages: list[dict],
    *,
    on_token: Callable[[str], None] | None = None,
    timeout: float | None = None,
    retries: int | None = None,
) -> LLMResult:
    timeout = settings.SKEIN_LLM_TIMEOUT_S if timeout is None else timeout
    retries = settings.SKEIN_LLM_RETRIES if retries is None else retries
    target = litellm_target(ref, provider)
    kwargs = dict(target, messages=messages, stream=True, stream_options={"include_usage": True}, timeout=timeout)
    if ref.temperature is not None:
        kwargs["temperature"] = ref.temperature
    if ref.max_tokens is not None:
        kwargs["max_tokens"] = ref.max_tokens

    attempt = 0
    while True:
        attempt += 1
        try:
            return _stream(kwargs, ref, target["model"], on_token, timeout)
        except _Streamed as exc:  # failed after tokens reached the participant: no silent retry
            raise NodeError(_describe(exc.cause, ref)) from exc.cause
        except TRANSIENT as exc:
            if attempt > retries:
                raise NodeError(_describe(exc, ref)) from exc
            delay = min(0.5 * 2 ** (attempt - 1), 4.0)
            logger.warning("model %s: transient error (%s), retry %d in %.1fs", ref.model, type(exc).__name__, attempt, delay)
            time.sleep(delay)
        except litellm.exceptions.APIError as exc:
            raise NodeError(_describe(exc, ref)) from exc
        except Exception as exc:  # litellm raises many types; every one must fail the step clearly
            raise NodeError(_describe(exc, ref)) from exc


class _Streamed(Exception):
    def __init__(self, cause: Exception):
        super().__init__(str(cause))
        self.cause = cause


def _stream(kwargs, ref: ModelRef, model: str, on_token, timeout: float) -> LLMResult:
    deadline = time.monotonic() + timeout
    response = litellm.completion(**kwargs)
    parts: list[str] = []
    usage = None
    try:
        for chunk in response:
            if time.monotonic() > deadline:
                raise litellm.Timeout(message=f"no complete answer within {timeout:.0f}s", model=model, llm_provider="")
            if getattr(chunk, "usage", None):
                usage = chunk.usage
            choices = getattr(chunk, "choices", None) or []
            delta = choices[0].delta.content if choices and choices[0].delta else None
            if delta:
                parts.append(delta)
                if on_token:
                    on_token(delta)
    except Exception as exc:
        if parts:
            raise _Streamed(exc) from exc
        raise
    text = "".join(parts)
    prompt_tokens = getattr(usage, "prompt_tokens", 0) or 0
    completion_tokens = getattr(usage, "completion_tokens", 0) or 0
    return LLMResult(
        text=text,
        model=ref.model,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost=_cost(model, prompt_tokens, completion_tokens),
    )


def _cost(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
    except Exception:  # models missing from litellm's price map (local, custom servers) cost nothing known
        return 0.0
    return float(prompt_cost + completion_cost)


def _describe(exc: Exception, ref: ModelRef) -> str:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    message = message.replace("litellm.", "")
    return f"model '{ref.model}' failed: {type(exc).__name__}: {message}"[:2000]
