"""Issue 14 ("Hardening II"): each attack that once worked, replayed. Anonymous where the attacker
was anonymous. Items 1 and 3 also run against a live server: tests/test_attacks_live.py.

Servers the attacks talk to are small stdlib HTTP servers on 127.0.0.1 started here.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.core.cache import cache
from django.test import override_settings
from rest_framework.test import APIClient

from providers.models import Provider
from runs.models import Message, Run, RunStep, Thread
from tests.fakellm import Reply
from tests.graphs import chat_graph, edge, node
from triggers.services import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parent.parent


# --- a configurable upstream --------------------------------------------------------------------
class Upstream:
    """An HTTP server answering every request with ``answer(handler) -> (status, headers, body)``;
    it records each request's method, path and headers."""

    def __init__(self):
        self.requests: list[dict] = []
        self.answer = lambda h: (200, {"Content-Type": "application/json"}, b"{}")
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                upstream.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body})
                status, headers, payload = upstream.answer(self)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def upstream():
    server = Upstream()
    yield server
    server.stop()


@pytest.fixture
def upstream2():
    server = Upstream()
    yield server
    server.stop()


def json_answer(status, payload, **headers):
    return lambda h: (status, {"Content-Type": "application/json", **headers}, json.dumps(payload).encode())


def html_answer(status=200):
    return lambda h: (status, {"Content-Type": "text/html"}, b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>")


def chat_completion(text="pong"):
    return {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }


def anonymous():
    cache.clear()  # login lockouts and throttles of earlier tests
    return APIClient()


# === High 1: ReDoS through router.static ==========================================================
def route_graph(provider_id, match):
    return {
        "nodes": [
            node("chat", "trigger.chat"),
            node(
                "route",
                "router.static",
                150,
                0,
                routes=[{"name": "hit", "match": match}, {"name": "other", "match": ""}],
                default_route="other",
            ),
            node("agent", "llm", 300, 0, model="agent-model", provider=provider_id),
            node("out", "output", 450, 0),
        ],
        "edges": [edge("chat", "route"), edge("route", "agent", "hit"), edge("route", "agent", "other"), edge("agent", "out")],
    }


def test_redos_patterns_that_rely_on_backtracking_are_refused_at_save_time(api, provider):
    for pattern in (r"/(?=a)b/", r"/(a)\1/", r"/x{1000}{1000}/"):
        created = api.post("/api/workflows/", {"name": "r", "graph": route_graph(provider.pk, pattern)}, format="json").json()
        problems = [e for e in created["errors"] if e["node"] == "route"]
        assert problems and "cannot be used" in problems[0]["message"] and "RE2" in problems[0]["message"], created["errors"]
        assert problems[0]["field"].startswith("routes.0.match")


def test_a_catastrophic_regex_matches_in_linear_time_on_a_bounded_text():
    from workflows.nodes.router import MAX_MATCHED_CHARS, route_matches

    # what froze the server for 12 s with 27 characters: now any length is answered at once
    assert route_matches(r"/^(\w+\s?)+$/", "a" * 4000 + "!", {}) is False
    assert route_matches(r"/^(\w+\s?)+$/", "a b c", {}) is True
    # a rule sees the first MAX_MATCHED_CHARS characters only
    assert route_matches("/needle/", "x" * MAX_MATCHED_CHARS + "needle", {}) is False
    assert route_matches("/needle/", "x" * (MAX_MATCHED_CHARS - 6) + "needle", {}) is True


def test_the_demo_billing_pattern_still_routes(chat, make_workflow, provider, fake_llm, api):
    from workflows.samples import BILLING_PATTERN

    workflow = make_workflow(route_graph(provider.pk, BILLING_PATTERN))
    assert workflow["errors"] == []
    for text, route in (("My INVOICE is wrong", "hit"), ("billing?", "hit"), ("hello there", "other"), ("rebilling", "other")):
        run = chat(workflow["id"], text)["run"]
        assert RunStep.objects.get(run_id=run, node="route").details["route"] == route, text


def test_a_node_has_a_cpu_budget():
    from engine.registry import NodeError
    from workflows.nodes.common import CpuBudget

    with override_settings(SKEIN_NODE_CPU_BUDGET_S=0):
        budget = CpuBudget("router.static 'route'")
        time.sleep(0.001)
        with pytest.raises(NodeError, match="longer than its 0 s budget"):
            budget.check()


def test_turn_tasks_have_celery_time_limits(settings):
    from runs.tasks import recover_turns, run_turn
    from triggers.tasks import fire_schedule

    assert (run_turn.soft_time_limit, run_turn.time_limit) == (settings.SKEIN_TURN_SOFT_TIME_LIMIT_S, settings.SKEIN_TURN_TIME_LIMIT_S)
    assert run_turn.soft_time_limit < run_turn.time_limit
    assert all(task.soft_time_limit and task.time_limit for task in (fire_schedule, recover_turns))


# === High 2: no demo superuser, the admin is locked out like the API, no development secrets ======
def bootstrap(*args, **env) -> str:
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("skein_bootstrap", *args, stdout=out)
    return out.getvalue()


def test_the_embedded_first_account_is_not_an_administrator(django_user_model, client):
    bootstrap("--no-demos")
    demo = django_user_model.objects.get(username="demo")
    assert demo.check_password("demo") and not demo.is_superuser and not demo.is_staff
    cache.clear()
    response = client.post("/admin/login/?next=/admin/", {"username": "demo", "password": "demo", "next": "/admin/"})
    assert response.status_code == 200 and "_auth_user_id" not in client.session  # the admin refuses non-staff


def test_an_old_demo_superuser_is_demoted(django_user_model):
    django_user_model.objects.create_superuser("demo", password="demo")
    assert "no longer an administrator" in bootstrap("--no-demos")
    assert not django_user_model.objects.get(username="demo").is_superuser


def test_the_full_mode_never_creates_demo_demo(django_user_model, monkeypatch):
    monkeypatch.delenv("SKEIN_ADMIN_PASSWORD", raising=False)
    with override_settings(FULL_MODE=True):
        output = bootstrap("--no-demos", "--username", "admin", "--password", "")
    assert not django_user_model.objects.filter(username="demo").exists()
    admin = django_user_model.objects.get(username="admin")
    password = output.split("Created the administrator account: admin / ", 1)[1].split()[0]
    assert len(password) >= 20 and admin.check_password(password) and admin.is_superuser
    assert not admin.check_password("demo")


def test_the_full_mode_takes_the_password_from_the_environment_and_refuses_a_weak_one(django_user_model):
    from django.core.management.base import CommandError

    with override_settings(FULL_MODE=True):
        with pytest.raises(CommandError, match="too weak"):
            bootstrap("--no-demos", "--username", "admin", "--password", "demo")
        output = bootstrap("--no-demos", "--username", "admin", "--password", "a-long-passphrase-of-mine")
    assert "password from SKEIN_ADMIN_PASSWORD" in output and "a-long-passphrase-of-mine" not in output
    assert django_user_model.objects.get(username="admin").check_password("a-long-passphrase-of-mine")


def test_the_admin_login_has_the_same_lockout_as_the_api(django_user_model):
    django_user_model.objects.create_superuser("root", password="the-right-password-1")
    client = anonymous()
    from django.test import Client

    browser = Client()
    for _ in range(25):
        browser.post("/admin/login/", {"username": "root", "password": "wrong", "next": "/admin/"})
    response = browser.post("/admin/login/", {"username": "root", "password": "the-right-password-1", "next": "/admin/"})
    assert response.status_code == 200 and "_auth_user_id" not in browser.session, "the right password got in after 25 failures"
    assert client.post("/api/auth/token/", {"username": "root", "password": "the-right-password-1"}, format="json").status_code == 429
    cache.clear()  # the lockout ends
    assert browser.post("/admin/login/", {"username": "root", "password": "the-right-password-1", "next": "/admin/"}).status_code == 302


def run_settings(env: dict) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SECRET_KEY", "SKEIN_", "REDIS_URL", "ALLOWED_HOSTS"))}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='config.settings'; django.setup();"
            "from django.conf import settings; print(settings.ALLOWED_HOSTS)",
        ],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_full_mode_refuses_to_start_with_development_secrets():
    full = {"REDIS_URL": "redis://127.0.0.1:6379/15"}
    refused = run_settings(full)
    assert refused.returncode != 0 and "needs a SECRET_KEY of its own" in refused.stderr
    refused = run_settings({**full, "SECRET_KEY": "x" * 60})
    assert refused.returncode != 0 and "needs SKEIN_ENCRYPTION_KEY" in refused.stderr
    started = run_settings({**full, "SECRET_KEY": "x" * 60, "SKEIN_ENCRYPTION_KEY": "a passphrase"})
    assert started.returncode == 0, started.stderr
    assert run_settings({}).returncode == 0  # the embedded mode keeps its development key


def test_docker_compose_binds_loopback_and_requires_secrets():
    compose = (ROOT / "docker-compose.yml").read_text()
    assert "change-me-in-production" not in compose
    assert '"127.0.0.1:8000:8000"' in compose and '"8000:8000"' not in compose
    assert "SECRET_KEY: ${SECRET_KEY:?" in compose and "SKEIN_ENCRYPTION_KEY: ${SKEIN_ENCRYPTION_KEY:?" in compose


# === Medium 3: templates without limits ===========================================================
def template_graph(template):
    return {
        "nodes": [node("chat", "trigger.chat"), node("render", "template", 150, 0, template=template), node("out", "output", 300, 0)],
        "edges": [edge("chat", "render"), edge("render", "out")],
    }


@pytest.mark.parametrize(
    "template, refusal",
    [
        ("{{ (7 ** 10000000) % 10 }}", "too large a number"),
        ("{{ 'a' * 20000000 }}", "would build up to 20,000,000 characters"),
        ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "steps"),
        ("{% set ns = namespace(x='a') %}{% for i in range(40) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}{{ ns.x }}", "characters"),
        ("{% set ns = namespace(x=2) %}{% for i in range(40) %}{% set ns.x = ns.x * ns.x %}{% endfor %}{{ ns.x }}", "too large a number"),
        ("{{ 'x'|center(100000000) }}", "would build up to"),
        ("{{ '%0999999999d' % 1 }}", "format width"),
        ("{{ '{:>999999999}'.format(1) }}", "format width"),
        ("{% set s = 'a' * 100000 %}{% set x %}{% for i in range(1000) %}{{ s }}{% endfor %}{% endset %}{{ x|length }}", "characters"),
        ("{% for i in range(100000) %}{{ 'abcdefghij' }}{% endfor %}{% for i in range(100000) %}x{% endfor %}", "produced more than"),
        ("{% macro f(n) %}{% if n %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}{% endmacro %}{{ f(40) }}", "template"),
    ],
)
def test_templates_have_limits(chat, make_workflow, template, refusal):
    turn = chat(make_workflow(template_graph(template))["id"], "hi")
    assert turn["status"] == "failed" and "render" in turn["error"] and refusal in turn["error"], turn["error"]


def test_a_huge_template_result_is_never_stored(chat, make_workflow, api):
    """``{{ 'a' * 20000000 }}`` once stored a 20 MB reply in the run, its step and the transcript."""
    turn = chat(make_workflow(template_graph("{{ 'a' * 20000000 }}"))["id"], "hi")
    run = Run.objects.get(pk=turn["run"])
    stored = [run.output, run.error] + [v for s in RunStep.objects.filter(run=run) for v in (s.output, s.error, s.input)]
    stored += list(Message.objects.filter(thread_id=turn["thread"]).values_list("content", flat=True))
    assert max(len(text) for text in stored) < 10_000
    # the largest template allowed still fits, under the cap
    ok = chat(make_workflow(template_graph("{{ 'a' * 90000 }}"))["id"], "hi")
    assert ok["status"] == "succeeded" and len(ok["reply"]) <= 60_000 and "[reply cut" in ok["reply"]


def test_ordinary_templates_still_work(chat, make_workflow):
    template = (
        "{% for w in input.split() %}{{ w|upper }}{{ ',' if not loop.last }}{% endfor %} ({{ '%05d'|format(42) }}, {{ '{:>4}'.format(7) }})"
    )
    assert chat(make_workflow(template_graph(template))["id"], "one two")["reply"] == "ONE,TWO (00042,    7)"


# === Medium 4: SSRF through api_base ==============================================================
@pytest.mark.parametrize(
    "base",
    [
        "http://169.254.169.254/latest/meta-data",
        "http://[fe80::1]/v1",
        "http://10.0.0.7/v1",
        "http://[::ffff:169.254.169.254]/",
        "http://0.0.0.0:80/v1",
    ],
)
def test_refused_addresses_are_a_400_on_api_base_when_saved_or_tested(api, base):
    for path in ("/api/providers/", "/api/providers/test/"):
        response = api.post(path, {"name": "p", "kind": "openai_compatible", "api_base": base, "model": "m"}, format="json")
        assert response.status_code == 400 and "api_base" in response.json(), (path, response.content)
    assert Provider.objects.count() == 0


def test_loopback_is_refused_in_the_full_mode_unless_listed(api, fake_llm):
    body = {"name": "p", "kind": "openai_compatible", "api_base": "http://[::1]:8080/v1"}
    assert api.post("/api/providers/", body, format="json").status_code == 201  # embedded: a local server is fine
    with override_settings(SKEIN_PROVIDER_ALLOW_LOOPBACK=False):  # the full mode's default
        for base in ("http://[::1]:8080/v1", "http://127.0.0.1:8080/v1", "http://localhost:8080/v1"):
            response = api.post("/api/providers/", {**body, "api_base": base}, format="json")
            assert response.status_code == 400 and "loopback" in str(response.json()["api_base"]), base
        with override_settings(SKEIN_PROVIDER_ALLOWED_HOSTS=["127.0.0.0/8"]):
            assert api.post("/api/providers/", {**body, "api_base": "http://127.0.0.1:8080/v1"}, format="json").status_code == 201
        with override_settings(SKEIN_PROVIDER_ALLOWED_HOSTS=["169.254.169.254"]):  # metadata stays refused
            assert api.post("/api/providers/", {**body, "api_base": "http://169.254.169.254/"}, format="json").status_code == 400


def test_a_stored_provider_on_a_refused_address_is_checked_again_on_every_request(api, make_workflow, chat, fake_llm):
    """Saved while allowed (or before the rule); then every model call refuses it, unsent."""
    provider = Provider.objects.create(owner_id=api.handler._force_user.pk, name="p", kind="openai_compatible", api_base=fake_llm.base_url)
    workflow = make_workflow(chat_graph(provider.pk))
    with override_settings(SKEIN_PROVIDER_ALLOW_LOOPBACK=False):  # the full mode's default
        turn = chat(workflow["id"], "hi")
        test = api.post(f"/api/providers/{provider.pk}/test/", {"model": "agent-model"}, format="json")
    assert turn["status"] == "failed" and "refused" in turn["error"] and "loopback" in turn["error"], turn["error"]
    assert test.status_code == 400 and "loopback" in str(test.json()["api_base"])
    assert fake_llm.requests == []  # nothing reached the server


def test_dns_is_checked_after_resolution_on_every_request(api, make_workflow, chat, fake_llm, monkeypatch):
    """A name that resolved to a public address when it was saved, and to the metadata service
    (DNS rebinding) when a model is called: the call is refused, nothing is sent."""
    from core import netguard

    answers = {"rebind.example": "93.184.216.34"}
    real = socket.getaddrinfo

    def fake_getaddrinfo(host, port, *args, **kwargs):
        if host in answers:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers[host], port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(netguard.socket, "getaddrinfo", fake_getaddrinfo)
    created = api.post(
        "/api/providers/", {"name": "p", "kind": "openai_compatible", "api_base": "http://rebind.example:8080/v1"}, format="json"
    )
    assert created.status_code == 201
    answers["rebind.example"] = "169.254.169.254"
    turn = chat(make_workflow(chat_graph(created.json()["id"]))["id"], "hi")
    assert turn["status"] == "failed" and "link-local or cloud-metadata" in turn["error"], turn["error"]
    direct = netguard.http_client()
    with pytest.raises(netguard.RefusedAddress):
        direct.get("http://rebind.example:8080/v1/models")


def test_redirects_are_not_followed(api, make_workflow, chat, upstream, upstream2):
    upstream2.answer = json_answer(200, {"object": "list", "data": [{"id": "internal-secret-model"}]})
    upstream.answer = lambda h: (307, {"Location": upstream2.base + h.path.removeprefix("/v1")}, b"")
    provider = api.post("/api/providers/", {"name": "p", "kind": "openai_compatible", "api_base": upstream.base}, format="json").json()
    answer = api.post(f"/api/providers/{provider['id']}/test/", {}, format="json").json()
    assert answer["ok"] is False and answer["reason"] == "not_openai_compatible" and "redirect" in answer["error"], answer
    turn = chat(make_workflow(chat_graph(provider["id"]))["id"], "hi")
    assert turn["status"] == "failed"
    assert upstream.requests and upstream2.requests == []  # the redirect's target was never asked
    assert "internal-secret-model" not in json.dumps(answer)


def test_the_connection_test_never_echoes_an_upstream_body(api, upstream):
    secret = "INTERNAL-ADMIN-TOKEN=" + "x" * 500
    upstream.answer = json_answer(500, {"error": {"message": "db password hunter2; " + secret}})
    answer = api.post("/api/providers/test/", {"kind": "openai_compatible", "api_base": upstream.base, "model": "m"}, format="json").json()
    assert answer["ok"] is False and answer["reason"] == "error" and len(answer["error"]) < 400
    assert secret not in answer["error"]
    upstream.answer = lambda h: (500, {"Content-Type": "text/plain"}, ("stack trace: " + secret).encode())
    answer = api.post("/api/providers/test/", {"kind": "openai_compatible", "api_base": upstream.base, "model": "m"}, format="json").json()
    assert "INTERNAL-ADMIN-TOKEN" not in answer["error"] and "stack trace" not in answer["error"]


def test_both_connection_test_endpoints_are_rate_limited(api, fake_llm, provider):
    cache.clear()
    with override_settings(SKEIN_PROVIDER_TESTS_PER_MINUTE=3):
        statuses = [api.post(f"/api/providers/{provider.pk}/test/", {"model": "m"}, format="json").status_code for _ in range(3)]
        draft = api.post("/api/providers/test/", {"kind": "openai_compatible", "api_base": fake_llm.base_url, "model": "m"}, format="json")
        stored = api.post(f"/api/providers/{provider.pk}/test/", {"model": "m"}, format="json")
    assert statuses == [200, 200, 200]
    assert draft.status_code == 429 and stored.status_code == 429 and "Retry-After" in draft.headers
    cache.clear()


# --- issue 15: connection tests that tell the truth ------------------------------------------------
def draft_test(api, base, model="", kind="openai_compatible", **extra):
    cache.clear()
    body = {"kind": kind, "api_base": base, **({"model": model} if model else {}), **extra}
    response = api.post("/api/providers/test/", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize("model", ["", "m"])
def test_an_html_page_is_never_connected(api, upstream, model):
    upstream.answer = html_answer()
    answer = draft_test(api, upstream.base, model)
    assert answer["ok"] is False and answer["reason"] == "not_openai_compatible" and "HTML page" in answer["error"], answer
    assert "nginx" not in answer["error"]


@pytest.mark.parametrize("model", ["", "m"])
def test_auth_refused_with_the_providers_one_line_reason(api, upstream, model):
    upstream.answer = json_answer(401, {"error": {"message": "Invalid API key.\nSee https://docs for details " + "y" * 400}})
    answer = draft_test(api, upstream.base, model, api_key="sk-wrong")
    assert answer["ok"] is False and answer["reason"] == "auth" and "Invalid API key. See" in answer["error"], answer
    assert "\n" not in answer["error"] and len(answer["error"]) < 300
    assert upstream.requests[0]["headers"]["Authorization"] == "Bearer sk-wrong"


def test_no_models_listed_and_unknown_model(api, upstream):
    upstream.answer = json_answer(200, {"object": "list", "data": []})
    assert draft_test(api, upstream.base)["reason"] == "no_models"

    def answer(h):
        if h.path.endswith("/models"):
            return 200, {"Content-Type": "application/json"}, json.dumps({"data": [{"id": "served"}]}).encode()
        return 404, {"Content-Type": "application/json"}, json.dumps({"error": {"message": "The model `gpt-17` does not exist"}}).encode()

    upstream.answer = answer
    unknown = draft_test(api, upstream.base, "gpt-17")
    assert unknown["reason"] == "unknown_model" and "gpt-17" in unknown["error"], unknown
    upstream.answer = lambda h: (
        200,
        {"Content-Type": "application/json"},
        json.dumps(chat_completion() if "chat" in h.path else {"data": [{"id": "served"}]}).encode(),
    )
    good = draft_test(api, upstream.base)
    assert good["ok"] is True and good["model"] == "served" and good["reply"] == "pong"


def test_json_of_another_shape_and_rate_limits(api, upstream):
    upstream.answer = json_answer(200, {"status": "ok"})
    assert draft_test(api, upstream.base, "m")["reason"] == "not_openai_compatible"
    upstream.answer = json_answer(429, {"error": {"message": "slow down"}})
    limited = draft_test(api, upstream.base, "m")
    assert limited["reason"] == "rate_limited" and "slow down" in limited["error"]


def test_unreachable_tls_and_timeout(api, upstream):
    from providers import diagnosis

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    assert draft_test(api, f"http://127.0.0.1:{closed}/v1", "m")["reason"] == "unreachable"
    # https to a server that speaks plain HTTP: the handshake fails
    tls = draft_test(api, f"https://127.0.0.1:{upstream.port}/v1", "m")
    assert tls["reason"] == "tls", tls
    upstream.answer = lambda h: (time.sleep(2), (200, {"Content-Type": "application/json"}, b"{}"))[1]
    slow = diagnosis.diagnose(provider=Provider(kind="openai_compatible", api_base=upstream.base), model="m", timeout=0.5)
    assert slow["reason"] == "timeout"


def test_the_reason_codes_are_the_shared_contract():
    from providers.diagnosis import EXPLANATIONS

    assert set(EXPLANATIONS) == {
        "unreachable",
        "tls",
        "auth",
        "not_openai_compatible",
        "no_models",
        "unknown_model",
        "timeout",
        "rate_limited",
        "refused_address",
        "error",
    }


# === Medium 5: a saved key sent elsewhere ===========================================================
def test_moving_a_stored_key_needs_the_key_again(api, upstream, upstream2):
    upstream.answer = upstream2.answer = lambda h: (200, {"Content-Type": "application/json"}, json.dumps(chat_completion()).encode())
    created = api.post(
        "/api/providers/",
        {"name": "p", "kind": "openai_compatible", "api_base": upstream.base, "api_key": "sk-alice-secret"},
        format="json",
    ).json()
    for change in ({"api_base": upstream2.base}, {"kind": "openai"}, {"api_base": upstream2.base, "name": "renamed"}):
        refused = api.patch(f"/api/providers/{created['id']}/", change, format="json")
        assert refused.status_code == 400 and "needs the key again" in str(refused.json()["api_key"]), change
    provider = Provider.objects.get(pk=created["id"])
    assert (provider.api_base, provider.kind, provider.api_key) == (upstream.base, "openai_compatible", "sk-alice-secret")
    cache.clear()
    api.post(f"/api/providers/{created['id']}/test/", {"model": "m"}, format="json")
    assert upstream2.requests == [] and upstream.requests[-1]["headers"]["Authorization"] == "Bearer sk-alice-secret"
    # with the key in the same request it moves; an empty key moves without one
    assert (
        api.patch(f"/api/providers/{created['id']}/", {"api_base": upstream2.base, "api_key": "sk-for-2"}, format="json").status_code == 200
    )
    api.post(f"/api/providers/{created['id']}/test/", {"model": "m"}, format="json")
    assert [r["headers"].get("Authorization") for r in upstream2.requests] == ["Bearer sk-for-2"]
    assert (
        api.patch(f"/api/providers/{created['id']}/", {"api_base": upstream.base, "api_key": ""}, format="json").json()["has_api_key"]
        is False
    )
    assert api.patch(f"/api/providers/{created['id']}/", {"name": "only the name"}, format="json").status_code == 200


def test_the_admin_form_also_needs_the_key_again(django_user_model, upstream, upstream2):
    from django.test import Client

    admin = django_user_model.objects.create_superuser("root", password="root-password-123")
    provider = Provider(owner=admin, name="p", kind="openai_compatible", api_base=upstream.base)
    provider.api_key = "sk-root-secret"
    provider.save()
    browser = Client()
    browser.force_login(admin)
    url = f"/admin/providers/provider/{provider.pk}/change/"
    page = browser.get(url)
    assert page.status_code == 200 and "sk-root-secret" not in page.content.decode()
    form = {"owner": admin.pk, "name": "p", "kind": "openai_compatible", "api_base": upstream2.base, "api_key": ""}
    refused = browser.post(url, form)
    assert refused.status_code == 200 and "type the key again" in refused.content.decode()
    provider.refresh_from_db()
    assert provider.api_base == upstream.base and provider.api_key == "sk-root-secret"
    assert browser.post(url, {**form, "api_key": "sk-new"}).status_code == 302
    provider.refresh_from_db()
    assert provider.api_base == upstream2.base and provider.api_key == "sk-new"
    assert browser.post(url, {**form, "api_base": "http://169.254.169.254/"}).status_code == 200  # refused address


# === Medium 6 and 7, Low: webhooks =================================================================
def two_webhooks(provider_id, *, require_signature=True):
    return {
        "nodes": [
            node("partner_a", "trigger.webhook", require_signature=require_signature),
            node("partner_b", "trigger.webhook", 0, 150, require_signature=require_signature),
            node("agent", "llm", 200, 0, model="agent-model", provider=provider_id),
            node("out", "output", 400, 0),
        ],
        "edges": [edge("partner_a", "agent"), edge("partner_b", "agent"), edge("agent", "out")],
    }


@pytest.fixture
def hooks(api, make_workflow, provider):
    workflow = make_workflow(two_webhooks(provider.pk))
    assert api.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 201
    triggers = {t["node"]: t for t in api.get(f"/api/workflows/{workflow['id']}/").json()["triggers"]}
    return {name: ("/" + t["webhook_url"].split("://", 1)[1].split("/", 1)[1], t["signing_secret"]) for name, t in triggers.items()}


def signed_post(hook, payload: dict | bytes, *, timestamp=None, key=None, wait=False):
    path, secret = hook
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    headers = {
        f"HTTP_{TIMESTAMP_HEADER.upper().replace('-', '_')}": stamp,
        f"HTTP_{SIGNATURE_HEADER.upper().replace('-', '_')}": sign(secret, stamp, body),
    }
    if key:
        headers["HTTP_IDEMPOTENCY_KEY"] = key
    return APIClient().generic("POST", path + ("?wait=1" if wait else ""), body, content_type="application/json", **headers)


def test_idempotency_keys_are_scoped_per_webhook(hooks, fake_llm):
    fake_llm.responder = lambda request: Reply(text=f"confidential answer to {request.last_user}")
    a = signed_post(hooks["partner_a"], {"message": "A's order"}, key="order-1", wait=True)
    b = signed_post(hooks["partner_b"], {"message": "B's order"}, key="order-1", wait=True)
    assert a.status_code == b.status_code == 200
    assert a.json()["run"] != b.json()["run"]
    assert b.json()["reply"] == "confidential answer to B's order" and "A's order" not in json.dumps(b.json())
    assert Run.objects.get(pk=b.json()["run"]).trigger_node == "partner_b"


def test_a_reused_key_with_another_body_is_a_422(hooks):
    first = signed_post(hooks["partner_a"], {"message": "pay 10"}, key="order-2")
    assert first.status_code == 202
    other = signed_post(hooks["partner_a"], {"message": "pay 1000"}, key="order-2")
    assert other.status_code == 422 and "different request body" in other.json()["detail"]
    assert Run.objects.count() == 1


def test_an_identical_signed_retry_gets_the_first_runs_answer(hooks, fake_llm):
    stamp = int(time.time())
    first = signed_post(hooks["partner_a"], {"message": "ship it"}, timestamp=stamp, key="order-3", wait=True)
    retry = signed_post(hooks["partner_a"], {"message": "ship it"}, timestamp=stamp, key="order-3", wait=True)
    assert first.status_code == retry.status_code == 200
    assert retry.json() == first.json() and retry.json()["reply"] == "echo: ship it"
    assert Run.objects.count() == 1 and len(fake_llm.requests) == 1


def test_seen_signatures_survive_a_restart(hooks):
    """In the embedded mode the seen signatures were in memory: a restart forgot them."""
    stamp = int(time.time())
    first = signed_post(hooks["partner_a"], {"message": "once"}, timestamp=stamp)
    assert first.status_code == 202
    cache.clear()  # all a restart loses
    replay = signed_post(hooks["partner_a"], {"message": "once"}, timestamp=stamp)
    assert replay.status_code == 202 and replay.json()["run"] == first.json()["run"]
    assert Run.objects.count() == 1
    from triggers.models import SeenSignature

    seen = SeenSignature.objects.get()
    from django.conf import settings

    assert seen.expires.timestamp() >= stamp + settings.SKEIN_WEBHOOK_REPLAY_WINDOW_S  # kept while its timestamp is valid


def test_forward_clock_skew_is_refused(hooks):
    from triggers.services import FUTURE_SKEW_S

    ahead = signed_post(hooks["partner_a"], {"message": "from the future"}, timestamp=int(time.time()) + 290)
    assert ahead.status_code == 401 and "in the future" in ahead.json()["detail"]
    within = signed_post(hooks["partner_a"], {"message": "a little ahead"}, timestamp=int(time.time()) + FUTURE_SKEW_S // 2)
    assert within.status_code == 202
    assert Run.objects.count() == 1


# === Medium 8: quadratic validation, no size cap ====================================================
def chain_below_a_cycle(length: int) -> dict:
    """The graph of the report: a chain of ``length`` nodes below a 2-node cycle (767 KB at 10,000)."""
    ids = ["loop_a", "loop_b"] + [f"s{index}" for index in range(length)]
    nodes = [{"id": "chat", "type": "trigger.chat"}] + [{"id": i, "type": "template"} for i in ids] + [{"id": "out", "type": "output"}]
    pairs = [("chat", "loop_a"), ("loop_a", "loop_b"), ("loop_b", "loop_a")] + list(zip(ids[1:], ids[2:] + ["out"]))
    return {"nodes": nodes, "edges": [{"source": a, "target": b} for a, b in pairs]}


def test_an_oversized_graph_is_a_400(api, settings):
    graph = chain_below_a_cycle(10_000)
    assert 700_000 < len(json.dumps(graph)) < 900_000
    for method, url in (("post", "/api/workflows/"),):
        response = getattr(api, method)(url, {"name": "big", "graph": graph}, format="json")
        assert response.status_code == 400 and f"at most {settings.SKEIN_MAX_GRAPH_NODES} nodes" in str(response.json()), response.content[
            :300
        ]
    small = api.post("/api/workflows/", {"name": "ok", "graph": chain_below_a_cycle(10)}, format="json").json()
    response = api.put(f"/api/workflows/{small['id']}/", {"graph": graph, "revision": small["revision"]}, format="json")
    assert response.status_code == 400 and api.get(f"/api/workflows/{small['id']}/").json()["revision"] == small["revision"]


def test_cycles_are_found_exactly_at_the_cap(api, settings):
    graph = chain_below_a_cycle(settings.SKEIN_MAX_GRAPH_NODES - 4)
    created = api.post("/api/workflows/", {"name": "at the cap", "graph": graph}, format="json")
    assert created.status_code == 201
    cyclic = {e["node"] for e in created.json()["errors"] if "part of a cycle" in e["message"]}
    assert cyclic == {"loop_a", "loop_b"}  # the chain below the cycle is not part of it


def test_validation_is_cached_per_revision_and_left_out_of_lists(api, make_workflow, provider, monkeypatch):
    from engine import validation

    workflow = make_workflow(chat_graph(provider.pk))
    calls = []
    real = validation.analyze
    monkeypatch.setattr(validation, "analyze", lambda graph: calls.append(1) or real(graph))
    validation._ANALYSES.clear()
    for _ in range(3):
        assert api.get(f"/api/workflows/{workflow['id']}/").json()["errors"] == []
    assert len(calls) == 1
    listed = api.get("/api/workflows/").json()["results"]
    assert listed and all("errors" not in item and "triggers" not in item for item in listed)
    assert len(calls) == 1


# === Medium 9: deeply nested JSON =================================================================
def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_deep_json_is_a_400_even_anonymously(hooks):
    client = anonymous()
    body = '{"username": ' + nested(400) + ', "password": "x"}'
    response = client.generic("POST", "/api/auth/token/", body, content_type="application/json")
    assert response.status_code == 400 and "nested deeper" in response.json()["detail"]
    # a webhook, depth 2,000 (and deeper than the C parser allows)
    for depth in (2_000, 100_000):
        path, _secret = hooks["partner_a"]
        hook = client.generic("POST", path, '{"message": ' + nested(depth) + "}", content_type="application/json")
        assert hook.status_code in (400, 401), hook.content  # signed webhook: the signature is checked first
    unsigned = Run.objects.count()
    assert unsigned == 0


def test_deep_json_to_an_unsigned_webhook_is_a_400(api, make_workflow, provider):
    workflow = make_workflow(two_webhooks(provider.pk, require_signature=False))
    api.post(f"/api/workflows/{workflow['id']}/publish/")
    trigger = api.get(f"/api/workflows/{workflow['id']}/").json()["triggers"][0]
    path = "/" + trigger["webhook_url"].split("://", 1)[1].split("/", 1)[1]
    for depth in (2_000, 100_000):
        response = APIClient().generic("POST", path, '{"message": "hi", "x": ' + nested(depth) + "}", content_type="application/json")
        assert response.status_code == 400 and "nested deeper" in response.json()["detail"], response.content
    assert Run.objects.count() == 0


# === Medium 10: DNS rebinding =====================================================================
def test_allowed_hosts_default_to_the_local_names():
    result = run_settings({})
    assert result.returncode == 0 and result.stdout.strip() == "['127.0.0.1', 'localhost']", result


def test_a_page_on_another_host_cannot_log_in_or_read(user):
    client = anonymous()
    response = client.post(
        "/api/auth/login/",
        {"username": "alice", "password": "alice-password"},
        format="json",
        HTTP_HOST="evil.example",
        HTTP_ORIGIN="http://evil.example",
    )
    assert response.status_code == 400
    assert client.get("/api/workflows/", HTTP_HOST="rebound.example").status_code == 400


# === Low: widget resync pages, reply caps, NUL, node ids, proxies, tokens, deploy checks ==========
def test_widget_history_comes_in_pages_under_the_frame_limit(api, chatbot):
    from asgiref.sync import async_to_sync

    from tests.realtime_fixtures import communicator

    assert api.post(f"/api/workflows/{chatbot['id']}/publish/").status_code == 201
    key = api.get(f"/api/workflows/{chatbot['id']}/widget/").json()["public_key"]
    thread = Thread.objects.create(
        workflow_id=chatbot["id"], owner_id=Provider.objects.get().owner_id, widget_token="tok-long", last_seq=40
    )
    big = "😀" * 50_000  # escaped in JSON: 12 bytes each, 600 KB a message
    Message.objects.bulk_create(
        [Message(thread=thread, seq=i + 1, role="assistant" if i % 2 else "user", content=big if i % 2 else f"q{i}") for i in range(40)]
    )

    async def scenario():
        comm = communicator(f"/ws/widget/{key}/")
        assert (await comm.connect(timeout=30))[0]
        await comm.receive_json_from(timeout=30)  # ready
        got, after, frames = [], 0, []
        while True:
            await comm.send_json_to({"type": "sync", "thread": "tok-long", "after": after})
            raw = await comm.receive_from(timeout=30)
            frames.append(len(raw.encode()))
            history = json.loads(raw)["data"]
            got += history["messages"]
            after = history["messages"][-1]["seq"]
            if not history["more"]:
                break
        await comm.disconnect()
        return got, frames

    got, frames = async_to_sync(scenario)()
    assert [m["seq"] for m in got] == list(range(1, 41)) and all(m["content"] in (big, f"q{m['seq'] - 1}") for m in got)
    assert max(frames) < 1024 * 1024 and len(frames) > 1


def test_a_model_reply_is_capped_everywhere_it_is_stored(chatbot, chat, fake_llm, settings):
    fake_llm.responder = lambda request: Reply(text=" ".join(f"word{i}" for i in range(30_000)))
    turn = chat(chatbot["id"], "talk a lot")
    assert turn["status"] == "succeeded", turn["error"]
    assert len(turn["reply"]) <= settings.SKEIN_MAX_REPLY_CHARS and turn["reply"].endswith("characters]")
    assert len(Message.objects.filter(thread_id=turn["thread"]).last().content) <= settings.SKEIN_MAX_REPLY_CHARS
    assert len(Run.objects.get(pk=turn["run"]).output) <= settings.SKEIN_MAX_REPLY_CHARS


def test_nul_through_the_widget_is_refused_and_the_socket_lives(api, chatbot):
    from asgiref.sync import async_to_sync

    from tests.realtime_fixtures import communicator, is_type, receive_until
    from widget import ratelimits

    ratelimits.rate_limit_reset()
    assert api.post(f"/api/workflows/{chatbot['id']}/publish/").status_code == 201
    key = api.get(f"/api/workflows/{chatbot['id']}/widget/").json()["public_key"]

    async def scenario():
        comm = communicator(f"/ws/widget/{key}/")
        assert (await comm.connect(timeout=30))[0]
        await comm.receive_json_from(timeout=30)
        results = []
        for frame in (
            {"type": "message", "text": "nul \x00 byte", "thread": None, "client_id": "c1"},
            {"type": "message", "text": "hi", "thread": None, "client_id": "c\x00"},
            {"type": "sync", "thread": "t\x00", "after": 0},
            {"type": "message", "text": "deep", "thread": None, "client_id": json.loads(nested(100))},
        ):
            await comm.send_json_to(frame)
            results.append((await receive_until(comm, is_type("error")))[-1]["data"]["code"])
        await comm.send_json_to({"type": "ping"})
        pong = await comm.receive_json_from(timeout=30)
        await comm.disconnect()
        return results, pong

    results, pong = async_to_sync(scenario)()
    assert results == ["bad_request"] * 4 and pong["type"] == "pong"
    assert Run.objects.count() == 0


def test_long_or_odd_node_ids_are_issues_not_500s(api, provider):
    graph = chat_graph(provider.pk)
    long_id = "n" * 150
    graph["nodes"][0]["id"] = long_id
    graph["edges"][0]["source"] = long_id
    created = api.post("/api/workflows/", {"name": "ids", "graph": graph}, format="json")
    assert created.status_code == 201
    assert any(e["field"] == "nodes[0].id" and "1-100" in e["message"] for e in created.json()["errors"])
    chat = api.post(f"/api/workflows/{created.json()['id']}/chat/", {"message": "hi"}, format="json")
    assert chat.status_code == 400 and Run.objects.count() == 0
    for odd in ("a/b", "x y", "", "ünïcode"):
        graph["nodes"][0]["id"] = odd
        assert api.post("/api/workflows/", {"name": "ids", "graph": graph}, format="json").status_code == 201


def test_behind_a_trusted_proxy_limits_count_each_client(django_user_model):
    django_user_model.objects.create_user("victim", password="victim-password-1")
    client = anonymous()

    def attempt(ip, username, password="wrong"):
        return client.post(
            "/api/auth/token/",
            {"username": username, "password": password},
            format="json",
            REMOTE_ADDR="10.0.0.2",
            HTTP_X_FORWARDED_FOR=f"{ip}, 10.0.0.2",
        ).status_code

    from accounts.auth import LOGIN_FAILURES_ALLOWED

    spray = LOGIN_FAILURES_ALLOWED["client"]  # failures of one client on any accounts that lock it
    # without the setting, X-Forwarded-For is ignored: the proxy's address is locked for everyone
    for index in range(spray):
        attempt("203.0.113.5", f"nobody{index}")
    assert attempt("198.51.100.7", "victim", "victim-password-1") == 429
    cache.clear()
    with override_settings(SKEIN_TRUSTED_PROXIES=["10.0.0.0/8"]):
        for index in range(spray):
            attempt("203.0.113.5", f"nobody{index}")
        assert attempt("203.0.113.5", "victim", "victim-password-1") == 429  # the attacker is locked out
        assert attempt("198.51.100.7", "victim", "victim-password-1") == 200  # everyone else is not
    cache.clear()


def test_the_widget_has_a_budget_per_key(api, chatbot):
    from widget import ratelimits
    from widget import services as widget

    ratelimits.rate_limit_reset()
    assert api.post(f"/api/workflows/{chatbot['id']}/publish/").status_code == 201
    workflow = chatbot["id"]
    from workflows.models import Workflow

    wf = Workflow.objects.get(pk=workflow)
    with override_settings(SKEIN_WIDGET_KEY_RATE_PER_MINUTE=6):
        outcomes = []
        for index in range(12):  # twelve visitors, each with an address of their own
            try:
                widget.rate_limit_take(public_key=wf.public_key, client=f"198.51.100.{index}")
                outcomes.append("ok")
            except widget.WidgetError as refused:
                outcomes.append(refused.code)
    assert outcomes.count("ok") < 12 and "rate_limited" in outcomes
    ratelimits.rate_limit_reset()


def test_api_tokens_are_rotated_on_logout_and_password_change(user):
    client = anonymous()
    token = client.post("/api/auth/token/", {"username": "alice", "password": "alice-password"}, format="json").json()["token"]
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/auth/me/").status_code == 200
    assert client.post("/api/auth/logout/").status_code == 204
    assert client.get("/api/auth/me/").status_code == 401  # the token died with the logout
    client.credentials()
    token = client.post("/api/auth/token/", {"username": "alice", "password": "alice-password"}, format="json").json()["token"]
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    wrong = client.post("/api/auth/password/", {"old_password": "nope", "new_password": "a-new-long-passphrase"}, format="json")
    assert wrong.status_code == 400 and "old_password" in wrong.json()
    weak = client.post("/api/auth/password/", {"old_password": "alice-password", "new_password": "12345"}, format="json")
    assert weak.status_code == 400 and "new_password" in weak.json()
    assert (
        client.post(
            "/api/auth/password/", {"old_password": "alice-password", "new_password": "a-new-long-passphrase"}, format="json"
        ).status_code
        == 204
    )
    assert client.get("/api/auth/me/").status_code == 401  # the old token is gone
    client.credentials()
    assert client.post("/api/auth/token/", {"username": "alice", "password": "a-new-long-passphrase"}, format="json").status_code == 200
    assert anonymous().post("/api/auth/password/", {"old_password": "x", "new_password": "y"}, format="json").status_code in (401, 403)


def test_password_change_keeps_the_session_and_ends_the_others(user):
    from django.test import Client

    mine, other = Client(), Client()
    mine.force_login(user)
    other.force_login(user)
    from rest_framework.test import APIClient as Api

    api_mine = Api()
    api_mine.cookies = mine.cookies
    response = mine.post(
        "/api/auth/password/",
        {"old_password": "alice-password", "new_password": "a-new-long-passphrase"},
        content_type="application/json",
        HTTP_X_CSRFTOKEN=mine.cookies.get("csrftoken").value if mine.cookies.get("csrftoken") else "",
    )
    assert response.status_code == 204, response.content
    assert mine.get("/api/auth/me/").status_code == 200
    assert other.get("/api/auth/me/").status_code in (401, 403)


def test_api_tokens_can_expire(user):
    from datetime import timedelta

    from django.utils import timezone
    from rest_framework.authtoken.models import Token

    client = anonymous()
    token = client.post("/api/auth/token/", {"username": "alice", "password": "alice-password"}, format="json").json()["token"]
    Token.objects.filter(key=token).update(created=timezone.now() - timedelta(hours=5))
    with override_settings(SKEIN_TOKEN_TTL_HOURS=4):
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        expired = client.get("/api/auth/me/")
        assert expired.status_code == 401 and "expired" in expired.json()["detail"]
        client.credentials()
        fresh = client.post("/api/auth/token/", {"username": "alice", "password": "alice-password"}, format="json").json()["token"]
        assert fresh != token
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/auth/me/").status_code == 401  # replaced by the fresh one


def test_check_deploy_is_clean_in_the_full_mode():
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SECRET_KEY", "SKEIN_", "REDIS_URL", "ALLOWED_HOSTS", "DEBUG"))}
    env = {
        **base,
        "REDIS_URL": "redis://127.0.0.1:6379/15",
        "SECRET_KEY": "k" * 20 + "Zq8#vR2@pL9!xM4$nB7%cW1^hT6&jF3*gD5(sA0)",
        "SKEIN_ENCRYPTION_KEY": "another passphrase",
        "ALLOWED_HOSTS": "skein.example.com",
        "CSRF_TRUSTED_ORIGINS": "https://skein.example.com",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_pages_carry_a_content_security_policy(client):
    response = client.get("/")
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "object-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy
    assert response["X-Content-Type-Options"] == "nosniff"
