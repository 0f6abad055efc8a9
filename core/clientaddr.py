"""The address of the client behind a request or a socket, for rate limits and lockouts.

Behind a reverse proxy every request comes from the proxy's address; limits keyed on it would lock
everyone out at once. When the direct peer is one of ``SKEIN_TRUSTED_PROXIES`` (addresses or
CIDRs), the client is the right-most address of ``X-Forwarded-For`` that is not a trusted proxy
itself. Otherwise the header is ignored: anyone can send it.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

from django.conf import settings


@lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple:
    return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries if entry.strip())


def _trusted(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip.version == net.version and ip in net for net in _networks(tuple(settings.SKEIN_TRUSTED_PROXIES)))


def client_address(peer: str | None, forwarded_for: str | None) -> str:
    peer = peer or "unknown"
    if not forwarded_for or not _trusted(peer):
        return peer
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _trusted(hop):
            try:
                return str(ipaddress.ip_address(hop))
            except ValueError:
                return peer  # a malformed header: count the proxy, not a made-up name
    return peer


def request_client(request) -> str:
    return client_address(request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR"))


def scope_client(scope) -> str:
    peer = (scope.get("client") or ["unknown"])[0]
    forwarded = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"x-forwarded-for"), None)
    return client_address(peer, forwarded)
