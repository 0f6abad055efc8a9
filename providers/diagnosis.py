"""A provider's "Test connection": what works, or which of a fixed set of reasons it does not.

Reasons (a contract with the editor): ``unreachable``, ``tls``, ``auth``, ``not_openai_compatible``,
``no_models``, ``unknown_model``, ``timeout``, ``rate_limited``, ``refused_address``, ``error``.

OpenAI-compatible servers (and ``openai`` with a base URL) are probed over HTTP, so the answer can
tell an HTML page from an API: ``GET <base>/models``, then one tiny ``POST <base>/chat/completions``.
Ollama lists ``GET <base>/api/tags``. Other kinds make one real call through litellm. Every request
goes through the address guard (``core.netguard``); nothing of a server's answer is returned
beyond a short, single-line reason.
"""

from __future__ import annotations

import ssl
import time

import httpx

from core import netguard
from engine.interfaces import ModelRef
from engine.registry import NodeError
from providers import llm, local_model

PROBE_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5", "ollama": "llama3.2", "local": local_model.MODEL_NAME}
PROBE_PROMPT = [{"role": "user", "content": "Reply with one word: pong"}]
MAX_REASON_CHARS = 160
MAX_REPLY_CHARS = 200

EXPLANATIONS = {
    "unreachable": "could not connect to the server (is the base URL right and the server running?)",
    "tls": "the TLS connection failed (certificate or protocol): check https:// and the server's certificate",
    "auth": "the provider rejected the API key (check the key)",
    "not_openai_compatible": "the server did not answer like an OpenAI-compatible API (check the base URL, usually ending in /v1)",
    "no_models": "the server lists no models: name one to test, or load a model on the server",
    "unknown_model": "the provider does not know this model (check the model name and the base URL)",
    "timeout": "the server did not answer in time",
    "rate_limited": "the provider is rate limiting (or the account is out of credit)",
    "refused_address": "this address is not allowed for providers",
    "error": "the call failed",
}


class Diagnosis(Exception):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


def diagnose(*, provider, model: str = "", timeout: float = 20.0) -> dict:
    """``{ok: True, model, reply, latency_ms, ...}`` or ``{ok: False, model, reason, error, latency_ms}``.

    Never raises for a provider's failure: a wrong key, an unreachable host, an HTML page or an
    unknown model is an answer to report."""
    started = time.monotonic()
    model = (model or "").strip()
    try:
        if provider.api_base and (problem := netguard.url_problem(provider.api_base)):
            raise Diagnosis("refused_address", problem)
        if provider.kind == "openai_compatible" or (provider.kind == "openai" and provider.api_base):
            model = model or (PROBE_MODELS["openai"] if provider.kind == "openai" else _first_model(provider, timeout))
            result = _probe_chat(provider, model, timeout)
        else:
            if provider.kind == "ollama":
                _check_ollama_lists(provider, model, timeout)
            model = model or PROBE_MODELS.get(provider.kind, "")
            result = _call_through_litellm(provider, model, timeout)
    except Diagnosis as diagnosis:
        error = EXPLANATIONS[diagnosis.reason] + (f": {diagnosis.detail}" if diagnosis.detail else "")
        return {"ok": False, "model": model, "reason": diagnosis.reason, "error": error, "latency_ms": _ms_since(started)}
    return {"ok": True, "model": model, **result, "latency_ms": _ms_since(started)}


# --- OpenAI-compatible servers --------------------------------------------------------------------
def _first_model(provider, timeout: float) -> str:
    served = _served_models(provider, timeout)
    if not served:
        raise Diagnosis("no_models", "" if served == [] else "the server does not list its models at GET <base URL>/models")
    return served[0]


def _probe_chat(provider, model: str, timeout: float) -> dict:
    """One tiny chat completion, whose answer must be one (an HTML page, or any other shape, is not)."""
    response = _request(
        provider,
        "POST",
        "/chat/completions",
        timeout,
        json={"model": model, "messages": PROBE_PROMPT, "max_tokens": 8, "temperature": 0, "stream": False},
    )
    if response.status_code == 404:
        if _json_or_none(response) is None:
            raise Diagnosis("not_openai_compatible", f"it answered POST /chat/completions with HTTP 404 and {_what(response, None)}")
        raise Diagnosis("unknown_model", f"'{_short(model)}'" + (f": {reason}" if (reason := _upstream_reason(response)) else ""))
    _raise_for_status(response)
    body = _json_or_none(response)
    choices = body.get("choices") if isinstance(body, dict) else None
    message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        raise Diagnosis("not_openai_compatible", f"its answer to POST /chat/completions is {_what(response, body)}, not a chat completion")
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    prompt_tokens, completion_tokens = _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens"))
    return {
        "reply": _short(str(message.get("content") or ""), MAX_REPLY_CHARS),
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "cost": llm._cost(f"openai/{model}", prompt_tokens, completion_tokens),
    }


def _served_models(provider, timeout: float) -> list[str] | None:
    """The ids at ``GET <base>/models``; None when the server has no such list (404)."""
    response = _request(provider, "GET", "/models", timeout)
    if response.status_code == 404 and _json_or_none(response) is not None:
        return None
    _raise_for_status(response)
    body = _json_or_none(response)
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise Diagnosis("not_openai_compatible", f"its answer to GET /models is {_what(response, body)}, not a model list")
    return [str(item["id"]) for item in data if isinstance(item, dict) and isinstance(item.get("id"), (str, int))]


# --- Ollama ---------------------------------------------------------------------------------------
def _ollama_base(provider) -> str:
    from django.conf import settings

    return (provider.api_base or settings.SKEIN_OLLAMA_API_BASE).rstrip("/")


def _ollama_models(provider, timeout: float) -> list[str]:
    response = _request(provider, "GET", "/api/tags", timeout, base=_ollama_base(provider))
    _raise_for_status(response)
    body = _json_or_none(response)
    models = body.get("models") if isinstance(body, dict) else None
    if not isinstance(models, list):
        raise Diagnosis("not_openai_compatible", f"its answer to GET /api/tags is {_what(response, body)}, not Ollama's model list")
    return [str(m.get("name") or m.get("model")) for m in models if isinstance(m, dict) and (m.get("name") or m.get("model"))]


def _check_ollama_lists(provider, model: str, timeout: float) -> None:
    served = _ollama_models(provider, timeout)
    if not served and not model:
        raise Diagnosis("no_models", "pull one with `ollama pull <model>`")
    if model and served and model not in served and f"{model}:latest" not in served:
        raise Diagnosis("unknown_model", f"'{_short(model)}' is not among the {len(served)} model(s) Ollama has")


# --- everything else: one real call through litellm -----------------------------------------------
def _call_through_litellm(provider, model: str, timeout: float) -> dict:
    if not model:
        raise Diagnosis("no_models", "name a model to test")
    ref = ModelRef(model=model, provider=getattr(provider, "pk", None), temperature=0.0, max_tokens=8)
    try:
        result = llm.complete(ref, provider, PROBE_PROMPT, timeout=timeout, retries=0)
    except NodeError as exc:
        cause = exc.__cause__ or exc
        reason, _ = llm.error_reason(cause)
        if reason == "unreachable" and _tls_failure(cause):
            reason = "tls"
        if reason not in EXPLANATIONS:
            reason = "error"
        # The bundled model's messages are Skein's own (which model it has): shown whole.
        detail = llm._message(cause) if provider.kind == "local" else _short(llm._message(cause))
        raise Diagnosis(reason, detail) from None
    return {
        "reply": _short(result.text, MAX_REPLY_CHARS),
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "cost": result.cost,
    }


# --- HTTP -----------------------------------------------------------------------------------------
def _request(provider, method: str, path: str, timeout: float, *, base: str | None = None, json: dict | None = None) -> httpx.Response:
    url = (base or provider.api_base.rstrip("/")) + path
    key = provider.api_key
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = netguard.http_client().request(method, url, headers=headers, json=json, timeout=timeout)
    except httpx.HTTPError as exc:
        reason = transport_reason(exc)
        detail = {"refused_address": str(exc), "timeout": f"no answer within {timeout:.0f} s"}.get(reason, _short(_connect_detail(exc)))
        raise Diagnosis(reason, detail) from None
    if response.is_redirect:
        raise Diagnosis(
            "not_openai_compatible", f"it answered {method} {path} with a redirect (HTTP {response.status_code}), which is not followed"
        )
    return response


def transport_reason(exc: BaseException) -> str:
    """The reason of a request that got no HTTP answer: refused by the address guard, timed out,
    TLS, or ``unreachable`` (nothing listens, or what answers does not speak HTTP)."""
    if netguard.is_refusal(exc):
        return "refused_address"
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    return "tls" if _tls_failure(exc) else "unreachable"


def _raise_for_status(response: httpx.Response) -> None:
    status = response.status_code
    if status in (401, 403):
        raise Diagnosis("auth", _upstream_reason(response) or f"HTTP {status}")
    if status == 429:
        raise Diagnosis("rate_limited", _upstream_reason(response))
    if status >= 400:
        reason = _upstream_reason(response)
        if reason is None and _json_or_none(response) is None:
            raise Diagnosis("not_openai_compatible", f"it answered HTTP {status} with {_what(response, None)}")
        raise Diagnosis("error", f"HTTP {status}" + (f": {reason}" if reason else ""))


def _json_or_none(response: httpx.Response):
    try:
        return response.json()
    except (ValueError, UnicodeDecodeError):
        return None


def _upstream_reason(response: httpx.Response) -> str | None:
    """The one-line reason of an OpenAI-style error body (``{"error": {"message": ...}}``), short."""
    body = _json_or_none(response)
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
    if not isinstance(message, str) or not message.strip():
        detail = body.get("detail") if isinstance(body, dict) else None
        message = detail if isinstance(detail, str) else None
    return _short(message) if message else None


def _what(response: httpx.Response, body) -> str:
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if "html" in kind or response.text.lstrip()[:1] == "<":
        return "an HTML page"
    if body is None:
        return f"not JSON ({_short(kind) or 'no content type'})"
    return "JSON of another shape"


def _tls_failure(exc: BaseException | None) -> bool:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = str(exc).upper()
        if isinstance(exc, ssl.SSLError) or "SSL" in text or "CERTIFICATE" in text or "TLS" in text:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _connect_detail(exc: httpx.HTTPError) -> str:
    text = str(exc) or type(exc).__name__
    if "Connection refused" in text or "Errno 111" in text:
        return "connection refused"
    if "resolve" in text or "Name or service not known" in text:
        return "the host name does not resolve"
    return text


def _short(text: str, limit: int = MAX_REASON_CHARS) -> str:
    line = " ".join(str(text).split())
    line = "".join(ch for ch in line if ch.isprintable())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _int(value) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
