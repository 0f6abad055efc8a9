"""Web origins as an owner writes them (``scheme://host[:port]``, ``https://*.example.com`` for
every subdomain), normalized, and a page's ``Origin`` matched against a workflow's list of the
pages that may embed its widget (``allowed_origins``)."""

from __future__ import annotations

import re

_ORIGIN = re.compile(r"^(https?)://(\*\.)?([a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*)(:(\d{1,5}))?$")
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def origin_normalize(value: str) -> str:
    """``scheme://host[:port]`` in lower case without a default port; ``ValueError`` otherwise.
    ``https://*.example.com`` allows every subdomain of example.com (not example.com itself)."""
    text = (value or "").strip().lower().rstrip("/")
    match = _ORIGIN.match(text)
    if not match:
        raise ValueError(f"'{value}' is not an origin: write scheme://host[:port], e.g. https://example.com")
    scheme, wildcard, host, port = match.group(1), match.group(2) or "", match.group(3), match.group(8)
    if port and int(port) > 65535:
        raise ValueError(f"'{value}' has an invalid port")
    if port == _DEFAULT_PORTS[scheme]:
        port = None
    return f"{scheme}://{wildcard}{host}" + (f":{port}" if port else "")


def origin_allowed(*, workflow, origin: str | None) -> bool:
    """No list: any site may embed the widget. With a list, the page's origin must be on it (a
    client that sends no Origin, i.e. not a browser page, is refused too)."""
    allowed = workflow.allowed_origins or []
    if not allowed:
        return True
    try:
        origin = origin_normalize(origin or "")
    except ValueError:
        return False
    scheme, _, host = origin.partition("://")
    for entry in allowed:
        if entry == origin:
            return True
        if "://*." in entry:
            entry_scheme, _, pattern = entry.partition("://*.")
            host_only, _, port = host.partition(":")
            pattern_host, _, pattern_port = pattern.partition(":")
            if entry_scheme == scheme and port == pattern_port and host_only.endswith("." + pattern_host):
                return True
    return False
