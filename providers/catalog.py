"""What providers serve: their model lists (the one place Skein asks a provider's server what it
serves) and the model a new node, template or demo starts with. This reaches the network."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache

from django.conf import settings

from core import netguard
from providers import diagnosis, llm, local_model
from providers.llm import ENVIRONMENT_KEYS, litellm
from providers.models import Provider

MAX_DEFAULT_LISTINGS = 3


def model_default(*, owner) -> dict:
    """The model a new node (or template, or demo) starts with on this installation, for ``owner``:
    ``{provider, model}``. A provider of the owner's that can be called (the newest first), else a
    model the environment's keys reach, else the bundled local model: something that answers."""
    providers = list(Provider.objects.filter(owner=owner).order_by("-created", "-id"))
    asked = 0  # servers asked for their model list: a few at most, each briefly (the editor waits)
    for provider in providers:
        if provider.kind == "local" or llm.credentials_problem(model="", provider=provider) is not None:
            continue
        if needs_listing(provider):
            if asked == MAX_DEFAULT_LISTINGS:
                continue
            asked += 1
        model = default_model(provider, timeout=2.0)
        if model:
            return {"provider": provider.pk, "model": model}
    for kind in llm.ENVIRONMENT_KEYS:
        model = DEFAULT_MODELS[kind]
        if llm.credentials_problem(model=model, provider=None) is None:
            return {"provider": None, "model": model}
    local = next((p for p in reversed(providers) if p.kind == "local"), None)
    if local is not None:
        return {"provider": local.pk, "model": DEFAULT_MODELS["local"]}
    return {"provider": None, "model": f"{local_model.PROVIDER}/{local_model.MODEL_NAME}"}


# The model a new node gets on a provider of this kind (kinds that serve a list use its first model).
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5", "local": local_model.MODEL_NAME}


MAX_LISTED_MODELS = 500


MAX_LIST_BYTES = 1_000_000


@dataclass
class ModelList:
    models: list[str] = field(default_factory=list)
    error: str = ""  # why the list could not be read: the explanation of ``reason``, nothing of the server's
    reason: str = ""  # one of the connection test's reasons (``diagnosis.EXPLANATIONS``), when it could not


def _unlisted(reason: str) -> ModelList:
    """A listing that failed, told by the connection test's reason only: no address, status or
    text of the server, so that the listing tells no more about what listens there than the
    connection test does (closed and non-HTTP ports are both ``unreachable``, any HTTP server
    that serves no model list ``not_openai_compatible``)."""
    return ModelList(error=diagnosis.EXPLANATIONS[reason], reason=reason)


def list_reaches_server(provider) -> bool:
    """Whether listing ``provider``'s models asks a server (its base URL, or Ollama's)."""
    return provider.kind == "ollama" or (provider.kind in ("openai", "openai_compatible") and bool(provider.api_base))


def list_models(*, provider, timeout: float = 5.0) -> ModelList:
    """The models a provider serves, for the editor's model picker and a new node's default.

    The one place Skein asks a provider's server what it serves: ``GET <base>/models`` for
    OpenAI-compatible servers (and OpenAI on a base URL of its own), ``GET <base>/api/tags`` for
    Ollama. OpenAI and Anthropic list litellm's chat models, the local provider its bundled model,
    and no provider (environment keys) the chat models of the kinds whose key is set. Never raises:
    a server that cannot be read is an ``error`` to show."""
    if provider is None:
        names = [m for kind, variable in ENVIRONMENT_KEYS.items() if os.environ.get(variable) for m in _litellm_models(kind)]
        return ModelList(names)
    kind = provider.kind
    if kind == "local":
        return ModelList([local_model.MODEL_NAME])
    if kind == "anthropic" or (kind == "openai" and not provider.api_base):
        return ModelList(_litellm_models(kind))
    if kind == "ollama":
        url, entries, name_key = (provider.api_base or settings.SKEIN_OLLAMA_API_BASE).rstrip("/") + "/api/tags", "models", "name"
    elif provider.api_base:
        url, entries, name_key = provider.api_base.rstrip("/") + "/models", "data", "id"
    else:
        return ModelList(error="this provider has no base URL", reason="unreachable")
    headers = {"Authorization": f"Bearer {provider.api_key}"} if provider.api_key else {}
    try:
        status, body = _get_bounded(url, headers=headers, timeout=timeout)
    except ListTooLarge:
        return _unlisted("error")
    except Exception as exc:  # httpx raises many types: every one means the server could not be read
        return _unlisted(diagnosis.transport_reason(exc))
    if status in (401, 403):
        return _unlisted("auth")
    if status == 429:
        return _unlisted("rate_limited")
    try:
        if status != 200:
            raise ValueError(status)
        items = json.loads(body).get(entries)
        names = [str(item[name_key]) for item in items if isinstance(item, dict) and item.get(name_key)]
    except Exception:
        return _unlisted("not_openai_compatible")
    return ModelList([name[:200] for name in names[:MAX_LISTED_MODELS]])


class ListTooLarge(ValueError):
    pass


def _get_bounded(url: str, *, headers: dict, timeout: float) -> tuple[int, bytes]:
    """GET ``url`` through the address guard (no redirects), reading at most MAX_LIST_BYTES of its body."""
    with netguard.http_client().stream("GET", url, headers=headers, timeout=timeout) as response:
        body = b""
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > MAX_LIST_BYTES:
                raise ListTooLarge(f"the model list is larger than {MAX_LIST_BYTES} bytes")
        return response.status_code, body


@lru_cache(maxsize=4)
def _litellm_models(kind: str) -> list[str]:
    """litellm's chat models of a kind, the default first."""
    names = sorted(
        name
        for name, info in litellm.model_cost.items()
        if info.get("litellm_provider") == kind and info.get("mode") == "chat" and "/" not in name and ":" not in name
    )
    default = DEFAULT_MODELS.get(kind)
    return ([default] if default in names else []) + [name for name in names if name != default]


def needs_listing(provider) -> bool:
    """Whether a provider's default model has to be asked of its server (it has no usual one)."""
    return provider.kind not in DEFAULT_MODELS or (provider.kind == "openai" and bool(provider.api_base))


def default_model(provider, *, timeout: float = 3.0) -> str:
    """The model a new node gets on ``provider``: the kind's usual one, else the first it serves ("" if none)."""
    if not needs_listing(provider):
        return DEFAULT_MODELS[provider.kind]
    listed = list_models(provider=provider, timeout=timeout).models
    return listed[0] if listed else ""
