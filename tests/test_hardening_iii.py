"""Issue 27 ("Hardening III"): each finding, replayed. Anonymous where the attacker was anonymous.
The items that need a live server or real processes live with their suites; the rest are here."""

from __future__ import annotations

import socket
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.test import override_settings

from engine.registry import NodeError
from providers.models import Provider
from tests.graphs import agent_graph

pytestmark = pytest.mark.django_db(transaction=True)


# === Medium 8: IPv6 spellings of refused IPv4 addresses ============================================
def ipv6_forms(ipv4: str) -> dict[str, str]:
    """Every IPv6 address that carries ``ipv4`` (each delivered to it by a translator or relay)."""
    a, b, c, d = (int(part) for part in ipv4.split("."))
    high, low = f"{a << 8 | b:x}", f"{c << 8 | d:x}"
    obfuscated = f"{(a << 8 | b) ^ 0xFFFF:x}:{(c << 8 | d) ^ 0xFFFF:x}"
    return {
        "nat64": f"64:ff9b::{high}:{low}",  # RFC 6052 well-known prefix
        "nat64-dotted": f"64:ff9b::{ipv4}",
        "nat64-local-96": f"64:ff9b:1::{high}:{low}",  # RFC 8215, a /96 inside it
        "nat64-local-48": f"64:ff9b:1:{high}:{c:x}:{d:x}00::",  # a /48: the address around bits 64-71
        "6to4": f"2002:{high}:{low}::1",  # RFC 3056
        "compatible": f"::{ipv4}",  # RFC 4291
        "mapped": f"::ffff:{ipv4}",
        "teredo": f"2001:0:4136:e378:8000:63bf:{obfuscated}",  # client behind a Teredo server
    }


def test_the_forms_decode_to_their_ipv4_address():
    """The attack's own fixture: each form really carries the address (so the refusals below are
    about the embedded address, not about the form)."""
    from core import netguard

    for form, address in ipv6_forms("169.254.169.254").items():
        judged = {str(a) for a in netguard.judged_addresses(netguard.ipaddress.ip_address(address))}
        assert "169.254.169.254" in judged, (form, address, judged)


FORMS = sorted(ipv6_forms("169.254.169.254"))


@pytest.mark.parametrize("form", FORMS)
def test_metadata_in_an_ipv6_form_is_refused_when_saved_tested_or_listed(api, form):
    address = ipv6_forms("169.254.169.254")[form]
    body = {"name": "p", "kind": "openai_compatible", "api_base": f"http://[{address}]/latest/meta-data", "model": "m"}
    for path in ("/api/providers/", "/api/providers/test/"):
        response = api.post(path, body, format="json")
        assert response.status_code == 400, (path, address, response.content)
        assert "link-local or cloud-metadata" in str(response.json()["api_base"]), (path, address, response.json())
    with override_settings(SKEIN_PROVIDER_ALLOWED_HOSTS=[address, "169.254.169.254"]):  # listing does not help
        assert api.post("/api/providers/", body, format="json").status_code == 400
    assert Provider.objects.count() == 0


@pytest.mark.parametrize("form", FORMS)
def test_a_private_address_in_an_ipv6_form_is_refused_unless_listed(api, form):
    for private in ("10.0.0.7", "192.168.1.1", "172.16.5.4", "100.64.0.1"):
        address = ipv6_forms(private)[form]
        body = {"name": "p", "kind": "openai_compatible", "api_base": f"http://[{address}]:8080/v1"}
        response = api.post("/api/providers/", body, format="json")
        assert response.status_code == 400 and "private or reserved" in str(response.json()["api_base"]), (address, response.content)
        if form.startswith(("nat64-local", "teredo")):
            continue  # judged as itself too: local NAT64 and Teredo addresses are not globally reachable
        with override_settings(SKEIN_PROVIDER_ALLOWED_HOSTS=[f"{private}/32"]):  # the operator's network stays reachable
            assert api.post("/api/providers/", body, format="json").status_code == 201, address


@pytest.mark.parametrize("form", ["nat64", "6to4", "compatible", "mapped"])
def test_loopback_in_an_ipv6_form_is_refused_in_the_full_mode(api, form):
    body = {"name": "p", "kind": "openai_compatible", "api_base": f"http://[{ipv6_forms('127.0.0.1')[form]}]:8080/v1"}
    with override_settings(SKEIN_PROVIDER_ALLOW_LOOPBACK=False):
        response = api.post("/api/providers/", body, format="json")
    assert response.status_code == 400 and "loopback" in str(response.json()["api_base"]), response.content


@pytest.mark.parametrize("form", ["nat64", "6to4", "mapped"])
def test_a_public_address_in_an_ipv6_form_is_accepted(api, form):
    body = {"name": "p", "kind": "openai_compatible", "api_base": f"http://[{ipv6_forms('93.184.216.34')[form]}]/v1"}
    assert api.post("/api/providers/", body, format="json").status_code == 201


def test_a_name_resolving_to_an_ipv6_form_of_metadata_is_refused_on_every_request(monkeypatch):
    from core import netguard

    real = socket.getaddrinfo

    def fake_getaddrinfo(host, port, *args, **kwargs):
        if host == "nat64.example":
            return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("64:ff9b::a9fe:a9fe", port, 0, 0))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(netguard.socket, "getaddrinfo", fake_getaddrinfo)
    with pytest.raises(netguard.RefusedAddress, match="link-local or cloud-metadata"):
        netguard.http_client().get("http://nat64.example/latest/meta-data")


class _Redirector:
    """A server on 127.0.0.1 redirecting every request to ``location``."""

    def __init__(self, location: str):
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self.send_response(302)
                self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/start"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("form", ["nat64", "6to4", "compatible", "teredo"])
def test_tool_and_http_nodes_refuse_ipv6_forms_directly_and_after_a_redirect(form):
    from tools import http

    target = f"http://[{ipv6_forms('169.254.169.254')[form]}]/latest/meta-data"
    with pytest.raises(NodeError, match="link-local or cloud-metadata"):
        http.request(method="GET", url=target, headers={}, body=None, timeout=5)
    redirector = _Redirector(target)
    try:
        with pytest.raises(NodeError, match="link-local or cloud-metadata"):
            http.request(method="GET", url=redirector.url, headers={}, body=None, timeout=5)
    finally:
        redirector.stop()


def test_a_tools_literal_ipv6_form_of_metadata_is_a_field_error(make_workflow, provider):
    tool = {
        "id": "lookup",
        "type": "tool.http",
        "name": "lookup",
        "description": "d",
        "parameters": {"type": "object", "properties": {}},
        "url": "http://[64:ff9b::a9fe:a9fe]/latest/",
    }
    errors = {(e["node"], e["field"]): e["message"] for e in make_workflow(agent_graph(provider.pk, [tool]))["errors"]}
    assert "link-local or cloud-metadata" in errors[("lookup", "url")], errors


# === Medium 4: an expired API token on /v1 =========================================================
def test_an_expired_api_token_is_refused_on_v1_like_everywhere(api, make_workflow, provider, fake_llm):
    """``SKEIN_TOKEN_TTL_HOURS`` once held on ``/api/`` only: ``/v1`` took an expired token."""
    import openai
    from django.utils import timezone
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    from runs.models import Run
    from tests.graphs import chat_graph
    from tests.openai_client import client_for

    workflow = make_workflow(chat_graph(provider.pk))
    assert api.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 201
    anonymous = APIClient()
    key = anonymous.post("/api/auth/token/", {"username": "alice", "password": "alice-password"}, format="json").json()["token"]
    Token.objects.filter(key=key).update(created=timezone.now() - timedelta(hours=5))
    runs = Run.objects.count()
    with override_settings(SKEIN_TOKEN_TTL_HOURS=4):
        for call in (
            lambda c: c.models.list(),
            lambda c: c.models.retrieve(workflow["id"]),
            lambda c: c.chat.completions.create(model=str(workflow["id"]), messages=[{"role": "user", "content": "hi"}]),
            lambda c: c.chat.completions.create(model=str(workflow["id"]), messages=[{"role": "user", "content": "hi"}], stream=True),
        ):
            with pytest.raises(openai.AuthenticationError) as refused:
                call(client_for(key))
            assert refused.value.status_code == 401 and refused.value.code == "expired_api_key", refused.value
        anonymous.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        assert anonymous.get("/api/auth/me/").status_code == 401  # the same check on the API
    assert Run.objects.count() == runs and fake_llm.requests == []
    with override_settings(SKEIN_TOKEN_TTL_HOURS=6):  # within the lifetime, the same token works
        assert [m.id for m in client_for(key).models.list().data] == [str(workflow["id"])]


# === Medium 7: the model listing as a port scanner ================================================
class _Listener:
    """A TCP server on 127.0.0.1 answering each connection with ``answer`` bytes (then closing)."""

    def __init__(self, answer: bytes):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.answer = answer
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(65536)
                    conn.sendall(self.answer)
                except OSError:
                    pass

    def stop(self):
        self.sock.close()


def _http(status: str, content_type: str, body: bytes) -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    return head.encode() + body


def test_the_model_listing_tells_services_apart_no_better_than_the_connection_test(api, user):
    """``GET /api/providers/{id}/models/`` once said "connection refused", "illegal status line",
    "answered HTTP 404" or "did not answer with a model list": a port scanner of what the server
    reaches. Now: the connection test's reason and its fixed explanation, nothing of the server."""
    from providers import services
    from providers.diagnosis import EXPLANATIONS

    closed = socket.create_server(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    listeners = {
        "ssh": _Listener(b"SSH-2.0-OpenSSH_9.6\r\n"),
        "redis": _Listener(b"-ERR unknown command\r\n"),
        "html": _Listener(_http("404 Not Found", "text/html", b"<html>nginx</html>")),
        "json": _Listener(_http("200 OK", "application/json", b'{"status": "green", "cluster": "internal"}')),
        "json-error": _Listener(_http("500 Internal Server Error", "application/json", b'{"error": {"message": "db down"}}')),
    }
    ports = {"closed": closed_port, **{name: listener.port for name, listener in listeners.items()}}
    answers = {}
    try:
        for name, port in ports.items():
            provider = services.provider_create(owner=user, name=name, kind="openai_compatible", api_base=f"http://127.0.0.1:{port}/v1")
            response = api.get(f"/api/providers/{provider.pk}/models/")
            assert response.status_code == 200, response.content
            answers[name] = response.json()
    finally:
        for listener in listeners.values():
            listener.stop()
    for name, answer in answers.items():
        assert answer["models"] == [] and answer["error"] == EXPLANATIONS[answer["reason"]], (name, answer)
        assert str(ports[name]) not in answer["error"] and "HTTP" not in answer["error"].replace("https://", ""), (name, answer)
    assert answers["closed"] == answers["ssh"] == answers["redis"]  # nothing listens, or not HTTP: the same
    assert answers["html"] == answers["json"] == answers["json-error"]  # any HTTP server without a model list: the same


def test_the_model_listing_is_rate_limited_like_the_connection_test(api, user, fake_llm):
    from django.core.cache import cache

    from providers import services

    server = services.provider_create(owner=user, name="s", kind="openai_compatible", api_base=fake_llm.base_url)
    local = services.provider_create(owner=user, name="l", kind="local")
    asked = []
    fake_llm.get_responder = lambda path: asked.append(path)  # None: the usual answer
    cache.clear()
    with override_settings(SKEIN_PROVIDER_TESTS_PER_MINUTE=3):
        for _ in range(3):
            assert api.get(f"/api/providers/{server.pk}/models/").json()["models"] == ["fake"]
        refused = api.get(f"/api/providers/{server.pk}/models/")
        assert refused.status_code == 429 and refused.has_header("Retry-After")
        assert len(asked) == 3  # the refused listing asked nothing
        for _ in range(5):  # a listing that asks no server is not counted
            assert api.get(f"/api/providers/{local.pk}/models/").status_code == 200


# === Low 14: the API docs without a Content-Security-Policy =======================================
def test_the_api_docs_page_runs_under_the_content_security_policy(client):
    """``/api/docs/`` was excluded from the policy (for a CDN long gone) and ran an inline script."""
    import re

    response = client.get("/api/docs/")
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy
    page = response.content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page), "an inline script"  # every script has a src
    assert "<style" not in page and " style=" not in page  # no inline style
    loaded = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert loaded and all(url.startswith("/") and not url.startswith("//") for url in loaded), loaded  # this origin only
    for url in loaded:
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert "Content-Security-Policy" in asset or url.startswith("/static/"), url
    script = client.get(next(url for url in loaded if "script" in url and "static" not in url))
    assert script["Content-Type"].startswith("application/javascript") and b"SwaggerUIBundle(" in script.content


# === Low 12: anyone could lock out a known account ===============================================
def test_one_address_cannot_lock_an_account_out_for_everyone(django_user_model):
    """Ten wrong passwords for ``admin`` from one address once locked ``admin`` out for 15
    minutes everywhere. Now they lock that address on that account; the account itself only after
    many failures from many addresses."""
    from django.core.cache import cache
    from rest_framework.test import APIClient

    from accounts.auth import LOGIN_FAILURES_ALLOWED

    django_user_model.objects.create_user("admin", password="the-admins-password-1")
    client = APIClient()

    def attempt(address, password="wrong", username="admin"):
        body = {"username": username, "password": password}
        return client.post("/api/auth/token/", body, format="json", REMOTE_ADDR=address).status_code

    cache.clear()
    for _ in range(25):
        attempt("203.0.113.5")
    assert attempt("203.0.113.5", "the-admins-password-1") == 429  # the attacker's address is locked on admin
    assert attempt("198.51.100.7", "the-admins-password-1") == 200  # the owner, elsewhere, is not
    # A distributed guess: the account's own, slower bound locks it for everyone.
    failures = LOGIN_FAILURES_ALLOWED["user"]
    per_address = LOGIN_FAILURES_ALLOWED["pair"]
    for index in range(failures // per_address + 1):
        for _ in range(per_address):
            attempt(f"192.0.2.{index + 1}")
    assert attempt("198.51.100.8", "the-admins-password-1") == 429
    cache.clear()
    # Spraying many accounts from one address locks that address.
    for index in range(LOGIN_FAILURES_ALLOWED["client"]):
        attempt("203.0.113.9", username=f"nobody{index}")
    assert attempt("203.0.113.9", "the-admins-password-1") == 429
    assert attempt("198.51.100.7", "the-admins-password-1") == 200
