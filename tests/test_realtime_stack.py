"""End to end in the full mode: a real Celery worker and real daphne, Redis between them, PostgreSQL.

The worker runs the turn and publishes through channels-redis; daphne's consumers forward to
WebSocket (and SSE) clients. The fake model server runs in this process, so the time a token leaves
it and the time the client receives it are read from one clock: the test prints those latencies
(figures, not assertions: docs/testing.md#performance).
"""

from __future__ import annotations

import json
import statistics
import time

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.fakellm import Reply
from tests.realtime_fixtures import SITE, published  # noqa: F401
from tests.stack import full_stack, log_in_over_http

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

WORDS = [f"w{i}" for i in range(40)]
REPLY = " ".join(WORDS)
TOKEN_DELAY = 0.02


def receive(ws, until, *, timeout=60.0):
    """Messages (with their arrival times) until ``until(message)``."""
    received = []
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"timed out; received {received}")
        message = json.loads(ws.recv(timeout=remaining))
        received.append((time.monotonic(), message))
        if until(message):
            return received


@pytest.fixture(scope="module")
def stack(django_db_setup, django_db_blocker, tmp_path_factory):
    """One worker and one daphne for the module, on the test database (data comes per test)."""
    import redis
    from django.db import connection

    from tests.conftest import TEST_REDIS_URL

    try:
        redis.Redis.from_url(TEST_REDIS_URL, socket_connect_timeout=2).ping()
    except redis.exceptions.ConnectionError as exc:
        pytest.fail(f"these tests need Redis at {TEST_REDIS_URL} (set SKEIN_TEST_REDIS_URL): {exc}")
    with django_db_blocker.unblock():
        if connection.vendor != "postgresql":
            pytest.fail("these tests need PostgreSQL: run them with DATABASE_URL=postgres://postgres@127.0.0.1:5432/test")
        name = connection.settings_dict["NAME"]
    with full_stack(name, TEST_REDIS_URL, tmp_path_factory.mktemp("stack"), concurrency=8) as running:
        running["ws"] = running["base"].replace("http://", "ws://")
        yield running


def test_widget_tokens_arrive_in_order_through_worker_and_redis(stack, published, fake_llm):
    fake_llm.responder = lambda request: Reply(text=REPLY, token_delay=TOKEN_DELAY)
    with connect(f"{stack['ws']}/ws/widget/{published['key']}/", origin=SITE, open_timeout=30) as ws:
        assert json.loads(ws.recv(timeout=30))["type"] == "ready"
        ws.send(json.dumps({"type": "message", "text": "count", "thread": None, "client_id": "m1"}))
        messages = [m for _, m in receive(ws, lambda m: m["type"] in ("run.finished", "run.failed", "error"))]
        types = [m["type"] for m in messages]
        assert types[:4] == ["thread.created", "accepted", "run.started", "node.started"], types
        run = messages[1]["data"]["run"]
        tokens = [m["data"]["text"] for m in messages if m["type"] == "llm.token"]
        # in order, none lost or doubled (tokens that queued up behind a send are merged into one)
        assert "".join(tokens) == REPLY
        assert len(tokens) > 1
        assert messages[-1] == {"type": "run.finished", "data": {"run": run, "reply": REPLY, "cut": False}}
        token = messages[0]["data"]["thread"]

        # a second turn on the warm worker, timed
        ws.send(json.dumps({"type": "message", "text": "again", "thread": token, "client_id": "m2"}))
        received = receive(ws, lambda m: m["type"] in ("run.finished", "run.failed", "error"))
        assert "".join(m["data"]["text"] for _, m in received if m["type"] == "llm.token") == REPLY
        assert received[-1][1]["type"] == "run.finished"

    # a reload: a new socket gets the history of the thread
    with connect(f"{stack['ws']}/ws/widget/{published['key']}/", origin=SITE, open_timeout=30) as ws:
        ws.recv(timeout=30)
        ws.send(json.dumps({"type": "sync", "thread": token, "after": 0}))
        history = receive(ws, lambda m: m["type"] == "history")[-1][1]["data"]
        assert [(m["role"], m["content"]) for m in history["messages"]] == [
            ("user", "count"),
            ("assistant", REPLY),
            ("user", "again"),
            ("assistant", REPLY),
        ]

    # Latency from the model server to the client: token i leaves the fake server about
    # i * TOKEN_DELAY after it received the request.
    sent_at = fake_llm.requests[1].received
    latencies, seen = [], 0
    for at, message in received:
        if message["type"] == "llm.token":
            seen += len(message["data"]["text"].split())
            latencies.append((at - (sent_at + (seen - 1) * TOKEN_DELAY)) * 1000)
    print(
        f"\ntoken latency model server -> WebSocket client: first {latencies[0]:.1f} ms, median {statistics.median(latencies):.1f} ms "
        f"({len(latencies)} messages for {len(WORDS)} tokens)"
    )


def test_owner_socket_and_sse_through_the_stack(stack, published, fake_llm, user):
    fake_llm.responder = lambda request: Reply(text=REPLY, token_delay=0.005)
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=user).key
    workflow_id = published["workflow"]["id"]
    with httpx.Client(base_url=stack["base"], timeout=60) as http:
        with http.stream(
            "POST", f"/api/workflows/{workflow_id}/chat/stream/", json={"message": "go"}, headers={"Authorization": f"Token {token}"}
        ) as response:
            assert response.status_code == 200
            events, kind = [], None
            for line in response.iter_lines():
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    events.append({"type": kind, "data": json.loads(line[6:])})
        assert events[0]["type"] == "accepted" and events[-1]["type"] == "run.finished"
        assert "".join(e["data"]["text"] for e in events if e["type"] == "llm.token") == REPLY
        thread = events[0]["data"]["thread"]

        # the owner's socket on that thread sees the next turn, node outputs included
        headers = {"Cookie": log_in_over_http(stack["base"], "alice", "alice-password")}
        with connect(f"{stack['ws']}/ws/threads/{thread}/", additional_headers=headers, open_timeout=30) as ws:
            reply = http.post(
                f"/api/workflows/{workflow_id}/chat/",
                json={"message": "again", "thread": thread},
                headers={"Authorization": f"Token {token}"},
            )
            assert reply.status_code == 200, reply.text
            messages = [m for _, m in receive(ws, lambda m: m["type"] in ("run.finished", "run.failed"))]
        assert messages[0]["type"] == "run.started"
        assert "".join(m["data"]["text"] for m in messages if m["type"] == "llm.token") == REPLY
        assert any(m["type"] == "node.finished" and m["data"].get("output") == REPLY for m in messages)


def test_refused_origin_at_the_handshake(stack, published, api):
    api.patch(f"/api/workflows/{published['workflow']['id']}/widget/", {"allowed_origins": [SITE]}, format="json")
    with pytest.raises(InvalidStatus) as refused:
        connect(f"{stack['ws']}/ws/widget/{published['key']}/", origin="http://evil.test", open_timeout=30)
    assert refused.value.response.status_code == 403
    with connect(f"{stack['ws']}/ws/widget/{published['key']}/", origin=SITE, open_timeout=30) as ws:
        assert json.loads(ws.recv(timeout=30))["type"] == "ready"


def test_an_idle_socket_stays_open(stack, published):
    """channels-redis waits for messages with a blocking BZPOPMIN of 5 s: a Redis client whose
    reads time out after 5 s (redis-py 8's default) would crash every idle consumer."""
    with connect(f"{stack['ws']}/ws/widget/{published['key']}/", origin=SITE, open_timeout=30) as ws:
        assert json.loads(ws.recv(timeout=30))["type"] == "ready"
        with pytest.raises(TimeoutError):
            ws.recv(timeout=8)  # nothing to say, and the server must not hang up meanwhile
        ws.send(json.dumps({"type": "ping"}))
        assert json.loads(ws.recv(timeout=30)) == {"type": "pong", "data": {}}
