"""The HTTP request of ``tool.http`` and ``http.request``: through the network guard (every
address checked, redirects followed here and each hop checked again), within its time bound, its
answer read up to ``SKEIN_TOOL_MAX_RESPONSE_BYTES``. The secrets its headers carry are taken out
of everything it returns (a server that echoes a header must not hand it to a model)."""

from __future__ import annotations

import time
from urllib.parse import urljoin

import httpx
from django.conf import settings

from core import netguard
from core.text import BadJSON, parse_json
from engine.registry import NodeError

MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)
REDACTED = "[secret]"


def request(*, method: str, url: str, headers: dict, body: str | None, timeout: float, redact: list[str] = ()) -> dict:
    """``{status, url, content_type, text, json}`` (``json`` None unless the answer is JSON), or
    ``NodeError`` saying why there is no answer (a refused address, a timeout, an answer too large)."""
    secrets = [s for s in redact if s]
    shown = _redacted(url, secrets)
    if problem := netguard.url_problem(url):
        raise NodeError(f"{shown}: {problem}")
    deadline = time.monotonic() + timeout
    for _hop in range(MAX_REDIRECTS + 1):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise NodeError(f"{shown}: no answer within {timeout:g} s")
        try:
            with netguard.http_client().stream(method, url, headers=headers, content=body, timeout=remaining) as response:
                location = response.headers.get("location")
                if response.status_code in REDIRECTS and location:
                    url = urljoin(url, location)
                    shown = _redacted(url, secrets)
                    if response.status_code == 303 or (response.status_code in (301, 302) and method == "POST"):
                        method, body = "GET", None
                    continue
                raw = _read(response, shown, deadline)
        except netguard.RefusedAddress as exc:
            raise NodeError(f"{shown}: {exc}") from None
        except httpx.TimeoutException:
            raise NodeError(f"{shown}: no answer within {timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise NodeError(f"{shown}: {type(exc).__name__}: {_redacted(str(exc), secrets)[:300]}") from None
        content_type = response.headers.get("content-type", "")
        text = _redacted(raw.decode(response.encoding or "utf-8", errors="replace"), secrets)
        return {"status": response.status_code, "url": shown, "content_type": content_type, "text": text, "json": _json(text, content_type)}
    raise NodeError(f"{shown}: more than {MAX_REDIRECTS} redirects")


def _read(response: httpx.Response, shown: str, deadline: float) -> bytes:
    limit = settings.SKEIN_TOOL_MAX_RESPONSE_BYTES
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise NodeError(f"{shown}: the answer is {int(declared):,} bytes, more than the {limit:,} bytes a tool may read")
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > limit:
            raise NodeError(f"{shown}: the answer is more than the {limit:,} bytes a tool may read")
        if time.monotonic() > deadline:
            raise httpx.ReadTimeout("the answer took too long", request=response.request)
    return bytes(body)


def _json(text: str, content_type: str):
    if "json" not in content_type and not text.lstrip().startswith(("{", "[")):
        return None
    try:
        return parse_json(text)  # bounded nesting: an answer cannot make the parser recurse without end
    except BadJSON:
        return None


def _redacted(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text
