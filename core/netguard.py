"""Where Skein's outbound requests may go: a provider's ``api_base``, a tool's URL, an MCP server
(SECURITY.md#provider-addresses-skein_provider_allowed_hosts).

Every outbound request goes through ``http_client()`` (or ``async_http_client()``): litellm's
OpenAI-SDK calls (``litellm.client_session``), its own HTTP handler for Anthropic and Ollama
(``llm_client()``), the ``/models`` listings, tools' HTTP requests and the MCP client. Its
transport resolves the host on every request, refuses the
request when any address the name resolves to is refused, connects over plain HTTP to the address
it checked (a second lookup cannot swap it: no DNS rebinding; over https the certificate binds the
connection to the name) and follows no redirects.

The policy:
- link-local and cloud-metadata addresses, unspecified, multicast and reserved ones: always refused;
- loopback: allowed in the embedded mode (local Ollama or llama.cpp servers), refused in the full
  mode unless ``SKEIN_PROVIDER_ALLOWED_HOSTS`` lists it (``SKEIN_PROVIDER_ALLOW_LOOPBACK`` says
  which, and defaults to the mode's);
- private networks (RFC 1918, unique local, carrier-grade NAT): refused unless listed;
- everything else (the internet): allowed.

An IPv6 address that carries an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) is judged
as that IPv4 address too (``judged_addresses``): a translator or relay delivers to it.
"""

from __future__ import annotations

import ipaddress
import socket
from functools import lru_cache
from urllib.parse import urlsplit

import anyio
import httpx
import httpx2
from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Cloud metadata services outside 169.254.0.0/16 (AWS IPv6, Alibaba, Oracle).
METADATA = tuple(ipaddress.ip_network(n) for n in ("fd00:ec2::254/128", "100.100.100.200/32", "192.0.0.192/32"))
ALWAYS_REFUSED = ("a link-local or cloud-metadata address", "not a usable host address")


class RefusedAddress(httpx.ConnectError):
    """A request to an address the policy refuses (an ``httpx`` error, so clients fail it cleanly)."""


def _allowed_entries() -> tuple[set[str], list]:
    names, networks = set(), []
    for entry in settings.SKEIN_PROVIDER_ALLOWED_HOSTS:
        entry = entry.strip().lower().strip("[]")
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            names.add(entry.rstrip("."))
    return names, networks


# IPv6 prefixes whose addresses carry an IPv4 address that a translator or relay delivers to.
NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052
NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215: operators choose the prefix length
SIX_TO_FOUR = ipaddress.ip_network("2002::/16")  # RFC 3056
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # RFC 4291 (deprecated; :: and ::1 are IPv6's own)
NOT_GLOBAL = (NAT64_LOCAL,)  # not globally reachable, though older Pythons call it global
NAT64_PREFIX_LENGTHS = (48, 56, 64, 96)


def _nat64_embedded(address: ipaddress.IPv6Address, prefix_length: int) -> ipaddress.IPv4Address:
    """The IPv4 address at ``prefix_length``'s place (RFC 6052 2.2: bits 64-71 are skipped)."""
    bits = f"{int(address):0128b}"
    bits = bits[96:] if prefix_length == 96 else (bits[:64] + bits[72:])[prefix_length : prefix_length + 32]
    return ipaddress.IPv4Address(int(bits, 2))


def judged_addresses(address: IPAddress) -> list[IPAddress]:
    """The addresses a request to ``address`` reaches and that the policy judges: an IPv6 address
    that only spells an IPv4 one (mapped, compatible, NAT64's well-known prefix, 6to4) is judged as
    that IPv4 address; a local NAT64 or a Teredo address as itself and every IPv4 address it may
    carry."""
    if address.version == 4:
        return [address]
    if address.ipv4_mapped:
        return [address.ipv4_mapped]
    if address in IPV4_COMPATIBLE and int(address) > 1:
        return [ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)]
    if address in NAT64_WELL_KNOWN:
        return [_nat64_embedded(address, 96)]
    if address.sixtofour:
        return [address.sixtofour]
    if address in NAT64_LOCAL:
        embedded = dict.fromkeys(_nat64_embedded(address, length) for length in NAT64_PREFIX_LENGTHS)
        return [*(ipv4 for ipv4 in embedded if int(ipv4)), address]  # 0.0.0.0: nothing at that place
    if address.teredo:
        return [*address.teredo, address]
    return [address]


def address_refusal(address: IPAddress, *, host_listed: bool = False) -> str | None:
    """Why a request may not go to ``address`` (a short phrase), or None when it may. An address
    that carries an IPv4 address is refused when that IPv4 address is."""
    refusals = [
        (reason, judged) for judged in judged_addresses(address) if (reason := _refusal(judged, host_listed=host_listed)) is not None
    ]
    if not refusals:
        return None
    # The refusal that no listing lifts is the one to tell.
    reason, judged = min(refusals, key=lambda refusal: refusal[0] not in ALWAYS_REFUSED)
    return reason if judged == address else f"{reason} ({judged} inside an IPv6 address)"


def _refusal(address: IPAddress, *, host_listed: bool) -> str | None:
    if address.is_link_local or any(address.version == net.version and address in net for net in METADATA):
        return ALWAYS_REFUSED[0]
    if address.is_unspecified or address.is_multicast:
        return ALWAYS_REFUSED[1]
    _names, networks = _allowed_entries()
    if host_listed or any(address.version == net.version and address in net for net in networks):
        return None
    if address.is_loopback:
        return None if settings.SKEIN_PROVIDER_ALLOW_LOOPBACK else "a loopback address (the full mode refuses it unless listed)"
    if not address.is_global or any(address.version == net.version and address in net for net in NOT_GLOBAL):
        return "a private or reserved address"
    return None


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to (a literal address is itself)."""
    try:
        return [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        pass
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos))


def _listed(host: str) -> bool:
    return host.lower().rstrip(".") in _allowed_entries()[0]


def check_address_list(host: str, addresses: list[IPAddress]) -> None:
    listed = _listed(host)
    for address in addresses:
        reason = address_refusal(address, host_listed=listed)
        if reason:
            shown = host.strip("[]") if host.strip("[]") == str(address) else f"{host} ({address})"
            hint = "" if reason.startswith(ALWAYS_REFUSED) else "; an operator can allow it with SKEIN_PROVIDER_ALLOWED_HOSTS"
            raise RefusedAddress(f"{shown} is {reason}{hint}")


def url_problem(url: str) -> str | None:
    """What is wrong with ``url`` as an address to send requests to (a provider's base URL when it
    is saved or tested, a tool's URL), or None. A name that does not resolve now is not refused
    here: every request checks again."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        return f"not a valid URL: {exc}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "use an http:// or https:// URL with a host name"
    if parts.username or parts.password:
        return "put credentials in a key or a secret, not in the URL"
    try:
        check_address_list(parts.hostname, resolve(parts.hostname, port))
    except RefusedAddress as exc:
        return str(exc)
    except (OSError, UnicodeError):
        return None
    return None


def _pinned(request):
    """The request's URL aimed at the address just checked, over plain HTTP (the Host header still
    names the host), so that a second lookup cannot swap it. Over https the certificate check binds
    the connection to the name: a rebound name cannot reach a service without that name's
    certificate."""
    host = request.url.host
    port = request.url.port or (443 if request.url.scheme == "https" else 80)
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError) as exc:
        raise httpx.ConnectError(f"cannot resolve {host}: {exc}", request=request) from exc
    try:
        check_address_list(host, addresses)
    except RefusedAddress as exc:
        raise RefusedAddress(str(exc), request=request) from None
    address = str(addresses[0])
    if request.url.scheme == "http" and address != host.strip("[]"):
        return request.url.copy_with(host=address)
    return request.url


class GuardedTransport(httpx.HTTPTransport):
    """Resolves, checks and pins the address of every request before it is sent."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.url = _pinned(request)
        response = super().handle_request(request)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            response.stream = _FinishedStreamDrain(response.stream)
        return response


class GuardedAsyncTransport(httpx2.AsyncHTTPTransport):
    """``GuardedTransport`` for asynchronous clients (httpx2, the MCP client's)."""

    async def handle_async_request(self, request):
        host = request.url.host
        port = request.url.port or (443 if request.url.scheme == "https" else 80)
        try:
            addresses = await anyio.to_thread.run_sync(resolve, host, port)
        except (OSError, UnicodeError) as exc:
            raise httpx2.ConnectError(f"cannot resolve {host}: {exc}", request=request) from exc
        try:
            check_address_list(host, addresses)
        except RefusedAddress as exc:
            raise httpx2.ConnectError(str(exc), request=request) from exc
        address = str(addresses[0])
        if request.url.scheme == "http" and address != host.strip("[]"):
            request.url = request.url.copy_with(host=address)
        return await super().handle_async_request(request)


def async_http_client(**kwargs):
    """A new guarded asynchronous client (bound to the event loop that uses it): no redirects, no
    proxy from the environment."""
    return httpx2.AsyncClient(transport=GuardedAsyncTransport(), follow_redirects=False, trust_env=False, **kwargs)


class _FinishedStreamDrain(httpx.SyncByteStream):
    """An event stream that, when its reader closes it right after the end marker (``[DONE]``),
    reads the few bytes left first, so that its connection goes back to the pool.

    The OpenAI SDK's synchronous stream stops reading at ``data: [DONE]`` and closes the response
    with the HTTP/1.1 chunked body's last bytes unread, which closes the connection: every model
    call would open a new one (a TCP and TLS handshake, one or more round trips to the provider).
    Only a stream whose last event was the end marker is drained (its server sends the rest at
    once, in the same write); one closed mid-answer is closed at once."""

    MAX_DRAIN_CHUNKS = 4

    def __init__(self, stream):
        self._stream = stream
        self._chunks = None
        self._tail = b""

    def __iter__(self):
        self._chunks = iter(self._stream)
        for chunk in self._chunks:
            self._tail = (self._tail + chunk)[-64:]
            yield chunk

    def close(self) -> None:
        try:
            if self._chunks is not None and self._tail.rstrip().endswith(b"[DONE]"):
                for _index, _chunk in zip(range(self.MAX_DRAIN_CHUNKS), self._chunks):
                    pass
        except (httpx.HTTPError, OSError):  # the answer was read: only the connection's reuse is lost
            pass
        finally:
            self._stream.close()


@lru_cache(maxsize=1)
def http_client() -> httpx.Client:
    """The one HTTP client for provider requests: guarded, no redirects, no proxy from the
    environment (a proxy would make the address check meaningless)."""
    # No cap on connections: a worker's threads each make one call at a time, and a capped pool
    # would make the thread past the cap wait for a free connection inside its model call.
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=64, keepalive_expiry=30.0)
    return httpx.Client(transport=GuardedTransport(limits=limits), follow_redirects=False, trust_env=False, timeout=httpx.Timeout(60.0))


@lru_cache(maxsize=1)
def llm_client():
    """``http_client()`` as litellm's own HTTP handler (Anthropic, Ollama and other non-OpenAI calls)."""
    from litellm.llms.custom_httpx.http_handler import HTTPHandler

    return HTTPHandler(client=http_client(), follow_redirects=False)


def litellm_kwargs(model: str) -> dict:
    """What a ``litellm.completion`` call needs for its requests to go through the guard. OpenAI-SDK
    calls use ``litellm.client_session`` (set to ``http_client()``); Anthropic and Ollama go through
    litellm's own handler, which takes the client per call."""
    if model.startswith(("anthropic/", "ollama/", "ollama_chat/")):
        return {"client": llm_client()}
    return {}


def is_refusal(exc: BaseException | None) -> RefusedAddress | None:
    """The ``RefusedAddress`` somewhere in an exception's chain (SDKs wrap what they catch)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, RefusedAddress):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None
