"""Issue 14, items 1 and 3, against a live server: a catastrophic route regex sent by an anonymous
widget visitor, and a template that computes a huge number, must not freeze the server.

Daphne runs Skein in the embedded mode (turns run inside it, as on `make run`) on the test
database. While the attack is in flight a second client requests a page over and over; every one
of those requests must be answered promptly *relative to the attack's own duration* (the attack
ends with a 3 s model call, so it lasts at least that long): a process frozen by the attack would
answer them only when it is over.
"""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
from websockets.sync.client import connect

from tests.fakellm import Reply
from tests.graphs import edge, node
from tests.stack import full_mode_env, start_daphne

pytestmark = pytest.mark.django_db(transaction=True)

MODEL_DELAY_S = 3.0
CATASTROPHIC = r"/^(\w+\s?)+$/"  # exponential in Python's re on "aaaa…!"


@pytest.fixture(scope="module")
def live(django_db_setup, django_db_blocker, tmp_path_factory):
    from django.db import connection

    with django_db_blocker.unblock():
        name = connection.settings_dict["NAME"]
    web, base = start_daphne(full_mode_env(name, "", SKEIN_WIDGET_BURST=100), tmp_path_factory.mktemp("daphne"))
    try:
        yield base
    finally:
        web.stop()


class Probe:
    """Asks ``base`` for a cheap page, again and again, while the attack runs; keeps each latency."""

    def __init__(self, base: str):
        self.base = base
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        with httpx.Client(base_url=self.base, timeout=120) as client:
            while not self._stop.is_set():
                started = time.monotonic()
                response = client.get("/api/auth/csrf/")
                self.latencies.append(time.monotonic() - started)
                if response.status_code != 200:
                    self.failures.append(f"{response.status_code}: {response.text[:200]}")

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=180)


def assert_answered_during(probe: Probe, attack_s: float):
    assert probe.latencies and not probe.failures, probe.failures
    slowest = max(probe.latencies)
    print(f"attack {attack_s:.2f}s; {len(probe.latencies)} requests meanwhile, the slowest {slowest:.3f}s")
    # A frozen server answers the probe only once the attack ends: its latency is then most of the
    # attack's duration. A responsive one answers within a small part of it.
    assert slowest * 3 < attack_s, f"a request during the attack took {slowest:.2f}s of the attack's {attack_s:.2f}s"


def test_a_catastrophic_route_regex_from_an_anonymous_visitor_freezes_nothing(live, api, make_workflow, provider, fake_llm):
    fake_llm.responder = lambda request: Reply(text="routed", delay=MODEL_DELAY_S)
    routes = [{"name": "words", "match": CATASTROPHIC}, {"name": "other", "match": ""}]
    graph = {
        "nodes": [
            node("chat", "trigger.chat"),
            node("route", "router.static", 150, 0, routes=routes, default_route="other"),
            node("agent", "llm", 300, 0, model="agent-model", provider=provider.pk),
            node("out", "output", 450, 0),
        ],
        "edges": [edge("chat", "route"), edge("route", "agent", "words"), edge("route", "agent", "other"), edge("agent", "out")],
    }
    workflow = make_workflow(graph)
    assert workflow["errors"] == [], workflow["errors"]
    assert api.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 201
    key = api.get(f"/api/workflows/{workflow['id']}/widget/").json()["public_key"]

    attack = "a" * 26 + "!"  # the anonymous visitor's message
    ws_base = live.replace("http://", "ws://")
    with connect(f"{ws_base}/ws/widget/{key}/", origin="http://site.test", open_timeout=60) as ws:
        assert json.loads(ws.recv(timeout=60))["type"] == "ready"
        started = time.monotonic()
        ws.send(json.dumps({"type": "message", "text": attack, "thread": None, "client_id": "attack-1"}))
        assert json.loads(ws.recv(timeout=120))["type"] == "thread.created"
        with Probe(live) as probe:
            while True:
                message = json.loads(ws.recv(timeout=300))
                if message["type"] in ("run.finished", "run.failed", "error"):
                    break
        attack_s = time.monotonic() - started
    assert message["type"] == "run.finished" and message["data"]["reply"] == "routed", message
    assert_answered_during(probe, attack_s)
    from runs.models import Run, RunStep

    run = Run.objects.get(payload__client_id="attack-1")
    assert RunStep.objects.get(run=run, node="route").details["route"] == "other"  # no match, and an answer


def test_a_template_computing_a_huge_number_freezes_nothing(live, user, make_workflow, provider, fake_llm):
    from rest_framework.authtoken.models import Token

    fake_llm.responder = lambda request: Reply(text="the model spoke first", delay=MODEL_DELAY_S)
    graph = {
        "nodes": [
            node("chat", "trigger.chat"),
            node("agent", "llm", 150, 0, model="agent-model", provider=provider.pk),
            node("render", "template", 300, 0, template="{{ input }} {{ (7 ** 10000000) % 10 }}"),
            node("out", "output", 450, 0),
        ],
        "edges": [edge("chat", "agent"), edge("agent", "render"), edge("render", "out")],
    }
    workflow = make_workflow(graph)
    token = Token.objects.create(user=user).key
    with httpx.Client(base_url=live, timeout=300, headers={"Authorization": f"Token {token}"}) as client:
        started = time.monotonic()
        done: dict = {}
        sender = threading.Thread(
            target=lambda: done.update(response=client.post(f"/api/workflows/{workflow['id']}/chat/", json={"message": "hi"}))
        )
        sender.start()
        with Probe(live) as probe:
            sender.join(timeout=300)
        attack_s = time.monotonic() - started
    assert_answered_during(probe, attack_s)
    turn = done["response"].json()
    assert done["response"].status_code == 200 and turn["status"] == "failed", turn
    assert "render" in turn["error"] and "too large a number" in turn["error"], turn["error"]


def test_a_socket_with_a_foreign_host_is_refused_at_the_handshake(live, api, chatbot):
    """Item 10 for sockets: a rebinding DNS name (Host: evil.example) reaches no consumer."""
    import socket

    from websockets.exceptions import InvalidStatus

    assert api.post(f"/api/workflows/{chatbot['id']}/publish/").status_code == 201
    key = api.get(f"/api/workflows/{chatbot['id']}/widget/").json()["public_key"]
    ws_base = live.replace("http://", "ws://")
    port = int(live.rsplit(":", 1)[1])
    with pytest.raises(InvalidStatus) as refused:  # the name in the URL is the Host header; the socket goes to the server
        connect(
            f"ws://evil.example:{port}/ws/widget/{key}/",
            sock=socket.create_connection(("127.0.0.1", port)),
            origin="http://evil.example",
            open_timeout=60,
        )
    assert refused.value.response.status_code == 403
    with connect(f"{ws_base}/ws/widget/{key}/", origin="http://site.test", open_timeout=60) as ws:  # the control
        assert json.loads(ws.recv(timeout=60))["type"] == "ready"
    assert httpx.get(f"{live}/api/auth/csrf/", headers={"Host": "evil.example"}, timeout=60).status_code == 400
