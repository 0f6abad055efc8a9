"""The embedded mode's server process for real (daphne as `make run` starts it, on a SQLite file of
its own, nothing else started): published schedules fire from it, and turns that a crash
(``kill -9``) interrupted are run again when it starts, without waiting for a next message."""

from __future__ import annotations

import concurrent.futures
import re
import sqlite3
import threading
from pathlib import Path

import httpx
import pytest

from tests.fakellm import Reply
from tests.graphs import edge, node
from tests.stack import EMBEDDED_APP, ROOT, embedded_env, embedded_prepare, start_embedded, wait_for

pytestmark = pytest.mark.django_db  # only for the fake model server's fixtures: the server has its own database


def test_make_run_serves_the_embedded_server():
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^run:.*?(?=^\S)", makefile, re.S | re.M).group(0)
    assert f"daphne $(LISTEN) {EMBEDDED_APP}" in recipe
    # Listening with a queue long enough for many clients connecting at once (Twisted's default is 50).
    assert re.search(r"^LISTEN = -e tcp:port=\$\(PORT\):interface=\$\(HOST\):backlog=\$\(BACKLOG\)$", makefile, re.M)


class Client:
    """The API of one server, as demo / demo (the account `make run` creates)."""

    def __init__(self, base: str):
        self.base = base
        token = httpx.post(f"{base}/api/auth/token/", json={"username": "demo", "password": "demo"}, timeout=60).json()["token"]
        self.headers = {"Authorization": f"Token {token}"}

    def get(self, path: str):
        response = httpx.get(self.base + path, headers=self.headers, timeout=60)
        assert response.status_code == 200, response.text
        return response.json()

    def post(self, path: str, body: dict | None = None, expect: int | None = None, timeout: float = 60):
        response = httpx.post(self.base + path, json=body or {}, headers=self.headers, timeout=timeout)
        if expect is not None:
            assert response.status_code == expect, response.text
        return response.json() if response.content else {}


def model_graph(provider: int, *triggers: dict) -> dict:
    nodes = [*triggers, node("agent", "llm", 300, 0, model="agent-model", provider=provider), node("out", "output", 600, 0)]
    return {"nodes": nodes, "edges": [edge(t["id"], "agent") for t in triggers] + [edge("agent", "out")]}


def publish_workflow(client: Client, fake_llm, name: str, *triggers: dict) -> dict:
    provider = client.post(
        "/api/providers/", {"name": "fake", "kind": "openai_compatible", "api_base": fake_llm.base_url, "api_key": "k"}, expect=201
    )
    workflow = client.post("/api/workflows/", {"name": name, "graph": model_graph(provider["id"], *triggers)}, expect=201)
    assert workflow["errors"] == [], workflow["errors"]
    client.post(f"/api/workflows/{workflow['id']}/publish/", expect=201)
    return client.get(f"/api/workflows/{workflow['id']}/")


@pytest.fixture
def installation(tmp_path: Path):
    """A fresh installation: migrated, with its first account, never started."""
    env = embedded_env(tmp_path / "db.sqlite3")
    embedded_prepare(env)
    return env


def test_a_published_interval_schedule_fires_with_nothing_else_started(installation, tmp_path, fake_llm):
    web, base = start_embedded(installation, tmp_path)
    try:
        client = Client(base)
        workflow = publish_workflow(client, fake_llm, "every second", node("tick", "trigger.schedule", interval_seconds=1, input="tick"))
        [trigger] = workflow["triggers"]
        assert trigger["scheduler"] == {"running": True, "message": ""}  # its beat has ticked

        def scheduled_runs():
            runs = client.get(f"/api/runs/?workflow={workflow['id']}&trigger=schedule")["results"]
            return runs if len([r for r in runs if r["status"] == "succeeded"]) >= 3 else None

        runs = wait_for(scheduled_runs, timeout=90, interval=0.5, what="three scheduled runs", diagnostics=web.output)
        assert {r["output"] for r in runs if r["status"] == "succeeded"} == {"echo: tick"}
        assert [r.last_user for r in fake_llm.requests][:3] == ["tick"] * 3
    finally:
        web.stop()


def test_turns_interrupted_by_kill_9_are_run_again_when_the_server_starts(installation, tmp_path, fake_llm):
    """A chat turn (on a thread) and a webhook's turn (no thread) are waiting on the model when the
    server is killed with SIGKILL. Started again, it finishes both, once each, with no new message."""
    held = threading.Event()

    def respond(request):
        if len(fake_llm.requests) <= 2:  # the two calls of the doomed server
            held.wait(120)
        return Reply(text=f"echo: {request.last_user}")

    fake_llm.responder = respond
    web, base = start_embedded(installation, tmp_path)
    pool = concurrent.futures.ThreadPoolExecutor(2)
    try:
        client = Client(base)
        workflow = publish_workflow(client, fake_llm, "crash", node("chat", "trigger.chat"), node("hook", "trigger.webhook", 0, 200))
        hook = next(t for t in workflow["triggers"] if t["type"] == "trigger.webhook")
        # the requests that are waiting when the server dies (they get no answer)
        pool.submit(client.post, f"/api/workflows/{workflow['id']}/chat/", {"message": "hello"}, timeout=300)
        pool.submit(httpx.post, hook["webhook_url"], json={"message": "from the hook"}, timeout=300)
        wait_for(lambda: len(fake_llm.requests) == 2, timeout=60, what="both model calls", diagnostics=web.output)
        runs = client.get(f"/api/runs/?workflow={workflow['id']}")["results"]
        assert sorted((r["trigger"], r["status"]) for r in runs) == [("chat", "running"), ("webhook", "running")]
        web.kill()  # kill -9: no goodbye
        web.proc.wait(timeout=10)
    finally:
        held.set()
        pool.shutdown(wait=False)
        web.stop()

    restarted, base = start_embedded(installation, tmp_path, name="embedded-restarted")
    try:
        client = Client(base)

        def finished():
            states = {r["trigger"]: r for r in client.get(f"/api/runs/?workflow={workflow['id']}")["results"]}
            return states if all(r["status"] == "succeeded" for r in states.values()) else None

        states = wait_for(finished, timeout=120, interval=0.5, what="both runs to finish after the restart", diagnostics=restarted.output)
        # by the start-up recovery (the periodic one would take up only runs older than a minute)
        ids = sorted(r["id"] for r in states.values())
        assert f"recovered 2 turn(s) interrupted before this start: {ids}" in restarted.output()
        assert {t: r["output"] for t, r in states.items()} == {"chat": "echo: hello", "webhook": "echo: from the hook"}
        assert states["webhook"]["thread"] is None
        for run in states.values():  # run again once, from a clean slate
            detail = client.get(f"/api/runs/{run['id']}/")
            assert [s["node"] for s in detail["steps"]] == ["chat" if run["trigger"] == "chat" else "hook", "agent", "out"]
        transcript = client.get(f"/api/threads/{states['chat']['thread']}/messages/")
        assert [(m["role"], m["content"]) for m in transcript] == [("user", "hello"), ("assistant", "echo: hello")]
        assert len(fake_llm.requests) == 4  # two calls that died with the server, one each after the restart
    finally:
        restarted.stop()
    with sqlite3.connect(tmp_path / "db.sqlite3") as database:
        assert database.execute("SELECT trigger, attempts FROM workflows_run ORDER BY trigger").fetchall() == [("chat", 2), ("webhook", 2)]
