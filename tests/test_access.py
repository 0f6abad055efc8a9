"""Access control, in one place: what a second account, an anonymous caller, a widget key and a
webhook URL can reach of the first account's workflows, versions, runs, threads, memory,
providers, triggers and sockets. (SECURITY.md, "what is tested".)

Every operation of the OpenAPI schema and every WebSocket route is listed below as owner-scoped
(a case of ``test_another_user_gets_nothing``), a list or create scoped to the caller, or public by
design with the reason; ``test_every_endpoint_and_socket_has_an_access_check`` fails when an
endpoint is added without being listed here.

Each owner-scoped case checks, for another user: 404 with a JSON body that gives nothing away,
nothing changed anywhere in the database, no model called; for an anonymous caller: 401/403; and,
as a control, that the owner's same request works (so that the 404 is about ownership, not about
a wrong URL).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable

import pytest
from asgiref.sync import async_to_sync
from rest_framework.test import APIClient

from runs.models import Run, Thread
from tests.conversation_helpers import wait_run
from tests.graphs import edge, node
from tests.realtime_fixtures import communicator, is_type, receive_until, session_cookie
from triggers.models import Webhook
from triggers.services import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign

pytestmark = pytest.mark.django_db(transaction=True)  # turns run in on_commit; consumers use other threads

SECRET = "alice's secret plans"


def full_graph(provider_id: int, *, require_signature: bool = False, model: str = "agent-model") -> dict:
    """Every kind of trigger on one model with a memory: chat, webhook, manual and schedule."""
    return {
        "nodes": [
            node("chat", "trigger.chat"),
            node("hook", "trigger.webhook", require_signature=require_signature),
            node("go", "trigger.manual"),
            node("tick", "trigger.schedule", cron="0 3 * * *", timezone="UTC", input="nightly"),
            node("agent", "llm", 200, 0, model=model, provider=provider_id, system_prompt="You are alice's bot."),
            # a summarizing memory (whose threshold no test reaches), so its summary can be edited
            node("mem", "memory.summary", 200, 200, max_messages=1000, keep_last=6),
            node("out", "output", 400, 0),
        ],
        "edges": [
            edge("chat", "agent"),
            edge("hook", "agent"),
            edge("go", "agent"),
            edge("tick", "agent"),
            edge("mem", "agent", "memory", "memory"),
            edge("agent", "out"),
        ],
    }


def publish(api, make_workflow, graph, name):
    workflow = make_workflow(graph, name=name)
    assert workflow["errors"] == [], workflow["errors"]
    assert api.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 201
    detail = api.get(f"/api/workflows/{workflow['id']}/").json()
    hooks = {t["node"]: t for t in detail["triggers"] if "webhook_url" in t}
    key = api.get(f"/api/workflows/{workflow['id']}/widget/").json()["public_key"]
    return SimpleNamespace(id=workflow["id"], revision=detail["revision"], hooks=hooks, key=key)


def hook_path(trigger: dict) -> str:
    return "/" + trigger["webhook_url"].split("://", 1)[1].split("/", 1)[1]


@pytest.fixture
def world(api, make_workflow, provider, fake_llm):
    """Alice's things: a published workflow with every trigger, a chat thread with memory, a
    thread-less manual run, a webhook, a widget key and a schedule."""
    bot = publish(api, make_workflow, full_graph(provider.pk), "alice's bot")
    turn = api.post(f"/api/workflows/{bot.id}/chat/", {"message": SECRET}, format="json").json()
    assert turn["status"] == "succeeded", turn
    manual = api.post(f"/api/workflows/{bot.id}/run/", {"message": "by hand"}, format="json").json()
    assert manual["status"] == "succeeded" and manual["thread"] is None, manual
    assert api.get(f"/api/threads/{turn['thread']}/memory/mem/").json()["messages"], "the memory should hold the turn"
    test = api.post(
        f"/api/workflows/{bot.id}/tests/", {"name": "alice's test", "turns": [{"message": SECRET, "expect": []}]}, format="json"
    ).json()
    test_run = wait_run(api, api.post(f"/api/workflows/{bot.id}/tests/run/", {}, format="json").json()["test_run"])
    customer = api.post(f"/api/workflows/{bot.id}/chat/", {"message": SECRET, "participant": "customer-1"}, format="json").json()
    participant = api.get(f"/api/runs/{customer['run']}/").json()["participant"]
    fact = api.post(f"/api/participants/{participant}/facts/", {"workflow": bot.id, "key": "plan", "value": SECRET}, format="json").json()
    secret = api.post("/api/secrets/", {"name": "orders_key", "value": SECRET}, format="json").json()
    return SimpleNamespace(
        workflow=bot.id,
        revision=bot.revision,
        provider=provider.pk,
        thread=turn["thread"],
        run=turn["run"],
        manual_run=manual["run"],
        hook=bot.hooks["hook"],
        key=bot.key,
        test=test["id"],
        test_run=test_run["id"],
        participant=participant,
        fact=fact["id"],
        secret=secret["id"],
    )


@pytest.fixture(autouse=True)
def _test_runs_settle():
    """Test runs execute in the background: let the ones a case started end before the next case."""
    from conversation_tests.models import TestRun

    yield
    deadline = time.monotonic() + 60
    while TestRun.objects.filter(status__in=["queued", "running"]).exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def snapshot() -> dict:
    """Every row the product stores (workflows, versions, providers, threads, messages, runs,
    steps, webhooks, memory, schedules, tokens, secrets)."""
    from django.apps import apps

    state = {}
    for model in apps.get_models():
        if model._meta.app_label in (
            *("workflows", "providers", "runs", "participants", "triggers", "conversation_tests", "memory", "tools"),
            *("django_celery_beat", "authtoken"),
        ):
            state[model._meta.label] = list(model.objects.order_by("pk").values())
    return state


def send(client, method: str, url: str, body: dict | None):
    response = getattr(client, method.lower())(url, body, format="json") if body is not None else getattr(client, method.lower())(url)
    if getattr(response, "streaming", False):  # SSE: read the stream to its end

        async def read():
            return b"".join([chunk async for chunk in response.streaming_content])

        response.streamed = async_to_sync(read)()
    return response


# --- owner-scoped operations ----------------------------------------------------------------------
@dataclass
class Case:
    method: str
    path: str  # as in the OpenAPI schema
    url: Callable[[SimpleNamespace], str]
    body: Callable[[SimpleNamespace], dict] | None = None
    owner: int = 200  # what the owner gets for the same request
    name: str = ""

    @property
    def id(self) -> str:
        return self.name or f"{self.method} {self.path}"


def workflow_url(suffix=""):
    return lambda w: f"/api/workflows/{w.workflow}/{suffix}"


def thread_url(suffix):
    return lambda w: f"/api/threads/{w.thread}/{suffix}"


FORGED = [{"role": "user", "content": "forged by mallory"}]

CASES = [
    Case("GET", "/api/workflows/{id}/", workflow_url()),
    Case(
        "PUT",
        "/api/workflows/{id}/",
        workflow_url(),
        lambda w: {"name": "pwned", "graph": {"nodes": [], "edges": []}, "revision": w.revision},
    ),
    Case("PATCH", "/api/workflows/{id}/", workflow_url(), lambda w: {"name": "pwned", "revision": w.revision}),
    Case("DELETE", "/api/workflows/{id}/", workflow_url(), owner=204),
    Case("POST", "/api/workflows/{id}/publish/", workflow_url("publish/"), owner=201),
    Case("POST", "/api/workflows/{id}/chat/", workflow_url("chat/"), lambda w: {"message": "hi"}),
    Case(
        "POST",
        "/api/workflows/{id}/chat/",
        workflow_url("chat/"),
        lambda w: {"message": "hi", "thread": w.thread},
        name="POST /api/workflows/{id}/chat/ (continuing the thread)",
    ),
    Case("POST", "/api/workflows/{id}/chat/stream/", workflow_url("chat/stream/"), lambda w: {"message": "hi", "version": "published"}),
    Case("POST", "/api/workflows/{id}/run/", workflow_url("run/"), lambda w: {"message": "hi"}),
    Case("GET", "/api/workflows/{id}/widget/", workflow_url("widget/")),
    Case("PATCH", "/api/workflows/{id}/widget/", workflow_url("widget/"), lambda w: {"allowed_origins": ["https://evil.test"]}),
    Case("POST", "/api/workflows/{id}/widget/", workflow_url("widget/"), owner=201),
    Case("POST", "/api/workflows/{id}/webhooks/{node}/regenerate/", workflow_url("webhooks/hook/regenerate/")),
    Case("GET", "/api/workflows/{id}/versions/", workflow_url("versions/")),
    Case("GET", "/api/workflows/{id}/versions/diff/", workflow_url("versions/diff/?from=1&to=draft")),
    Case("POST", "/api/workflows/{id}/versions/{number}/restore/", workflow_url("versions/1/restore/"), lambda w: {}),
    Case("GET", "/api/workflows/{id}/export/", workflow_url("export/")),
    Case("GET", "/api/workflows/{id}/limits/", workflow_url("limits/")),
    Case("PATCH", "/api/workflows/{id}/limits/", workflow_url("limits/"), lambda w: {"workflow": {"tokens": 1}}),
    Case("GET", "/api/threads/{id}/", thread_url("")),
    Case("PATCH", "/api/threads/{id}/", thread_url(""), lambda w: {"title": "pwned"}),
    Case("DELETE", "/api/threads/{id}/", thread_url(""), owner=204),
    Case("GET", "/api/runs/{id}/", lambda w: f"/api/runs/{w.run}/"),
    Case("GET", "/api/runs/{id}/", lambda w: f"/api/runs/{w.manual_run}/", name="GET /api/runs/{id}/ (a run without a thread)"),
    Case("GET", "/api/threads/{id}/messages/", thread_url("messages/")),
    Case("GET", "/api/threads/{id}/memory/", thread_url("memory/")),
    Case("GET", "/api/threads/{id}/memory-export/", thread_url("memory-export/")),
    Case(
        "POST",
        "/api/threads/{id}/memory-import/",
        thread_url("memory-import/"),
        lambda w: {"histories": [{"history": "global", "name": "", "messages": FORGED}]},
    ),
    Case("GET", "/api/threads/{id}/memory/{name}/", thread_url("memory/mem/")),
    Case("PUT", "/api/threads/{id}/memory/{name}/", thread_url("memory/mem/"), lambda w: {"messages": FORGED}),
    Case("PATCH", "/api/threads/{id}/memory/{name}/", thread_url("memory/mem/"), lambda w: {"summary": "forged by mallory"}),
    Case("DELETE", "/api/threads/{id}/memory/{name}/", thread_url("memory/mem/"), owner=204),
    Case("GET", "/api/providers/{id}/", lambda w: f"/api/providers/{w.provider}/"),
    Case(
        "PATCH",
        "/api/providers/{id}/",
        lambda w: f"/api/providers/{w.provider}/",
        lambda w: {"api_base": "http://evil.test/v1", "api_key": "sk-new"},
    ),
    Case("DELETE", "/api/providers/{id}/", lambda w: f"/api/providers/{w.provider}/", owner=204),
    Case("POST", "/api/providers/{id}/test/", lambda w: f"/api/providers/{w.provider}/test/", lambda w: {"model": "agent-model"}),
    # conversation tests (docs/conversation-tests.md#from-the-api)
    Case("GET", "/api/workflows/{id}/tests/", workflow_url("tests/")),
    Case(
        "POST",
        "/api/workflows/{id}/tests/",
        workflow_url("tests/"),
        lambda w: {"name": "t", "turns": [{"message": "hi", "expect": []}]},
        owner=201,
    ),
    Case("POST", "/api/workflows/{id}/tests/run/", workflow_url("tests/run/"), lambda w: {}, owner=202),
    Case("GET", "/api/workflows/{id}/tests/export/", workflow_url("tests/export/")),
    Case(
        "POST",
        "/api/workflows/{id}/tests/import/",
        workflow_url("tests/import/"),
        lambda w: {"format": "jsonl", "content": '{"name": "t", "turns": [{"message": "hi", "expect": []}]}'},
        owner=201,
    ),
    Case("GET", "/api/workflows/{id}/tests/settings/", workflow_url("tests/settings/")),
    Case("PATCH", "/api/workflows/{id}/tests/settings/", workflow_url("tests/settings/"), lambda w: {"publish_requires_passing": True}),
    Case("GET", "/api/workflows/{id}/test-runs/", workflow_url("test-runs/")),
    Case("GET", "/api/tests/{id}/", lambda w: f"/api/tests/{w.test}/"),
    Case(
        "PUT", "/api/tests/{id}/", lambda w: f"/api/tests/{w.test}/", lambda w: {"name": "pwned", "turns": [{"message": "x", "expect": []}]}
    ),
    Case("DELETE", "/api/tests/{id}/", lambda w: f"/api/tests/{w.test}/", owner=204),
    Case("POST", "/api/threads/{id}/save-as-test/", thread_url("save-as-test/"), lambda w: {}, owner=201),
    Case("GET", "/api/test-runs/{id}/", lambda w: f"/api/test-runs/{w.test_run}/"),
    Case("GET", "/api/test-runs/{id}/compare/{other}/", lambda w: f"/api/test-runs/{w.test_run}/compare/{w.test_run}/"),
    Case("GET", "/api/providers/{id}/models/", lambda w: f"/api/providers/{w.provider}/models/"),
    # participants and their facts (docs/participants.md)
    Case("GET", "/api/participants/{id}/", lambda w: f"/api/participants/{w.participant}/"),
    Case("DELETE", "/api/participants/{id}/", lambda w: f"/api/participants/{w.participant}/", owner=204),
    Case("GET", "/api/participants/{id}/facts/", lambda w: f"/api/participants/{w.participant}/facts/"),
    Case(
        "POST",
        "/api/participants/{id}/facts/",
        lambda w: f"/api/participants/{w.participant}/facts/",
        lambda w: {"workflow": w.workflow, "key": "forged", "value": "by mallory"},
        owner=201,
    ),
    Case("GET", "/api/facts/{id}/", lambda w: f"/api/facts/{w.fact}/"),
    Case("PUT", "/api/facts/{id}/", lambda w: f"/api/facts/{w.fact}/", lambda w: {"key": "plan", "value": "forged by mallory"}),
    Case("PATCH", "/api/facts/{id}/", lambda w: f"/api/facts/{w.fact}/", lambda w: {"value": "forged by mallory"}),
    Case("DELETE", "/api/facts/{id}/", lambda w: f"/api/facts/{w.fact}/", owner=204),
    # secrets (docs/tools.md#secrets): their values are never returned, to the owner either
    Case("GET", "/api/secrets/{id}/", lambda w: f"/api/secrets/{w.secret}/"),
    Case("PUT", "/api/secrets/{id}/", lambda w: f"/api/secrets/{w.secret}/", lambda w: {"value": "forged by mallory"}),
    Case("DELETE", "/api/secrets/{id}/", lambda w: f"/api/secrets/{w.secret}/", owner=204),
]

# Scoped to the caller by construction: lists show only the caller's rows, creates make the
# caller's own; test_lists_and_creates_are_scoped_to_the_caller.
CALLER_SCOPED = {
    ("GET", "/api/workflows/"),
    ("POST", "/api/workflows/"),
    ("GET", "/api/runs/"),
    ("GET", "/api/providers/"),
    ("POST", "/api/providers/"),
    ("GET", "/api/threads/"),
    ("POST", "/api/workflows/import/"),
    ("GET", "/api/providers/default/"),  # the caller's own providers only: test_the_default_model_is_the_callers
    ("GET", "/api/participants/"),
    ("GET", "/api/templates/"),  # on the caller's default model: test_another_users_templates_never_name_my_provider
    ("GET", "/api/secrets/"),
    ("POST", "/api/secrets/"),
    ("POST", "/api/tools/mcp/"),  # names the caller's own secrets only
}
# Public by design, with what protects them instead.
PUBLIC = {
    ("POST", "/api/hooks/{token}/"): "the secret URL is the capability: test_webhook_urls_*",
    ("GET", "/api/widget/{public_key}/"): "the widget's public key, published workflows only: test_a_widget_key_*",
    ("POST", "/api/auth/token/"): "logging in",
    ("POST", "/api/auth/login/"): "logging in",
    ("POST", "/api/auth/logout/"): "the caller's own session",
    ("GET", "/api/auth/me/"): "the caller's own account",
    ("POST", "/api/auth/password/"): "the caller's own account (anonymous: 401/403): test_password_change_*",
    ("GET", "/api/auth/csrf/"): "a CSRF token",
    ("GET", "/api/node-types/"): "the node registry, the same for everyone",
    ("POST", "/api/providers/test/"): "tests the settings in the body; reads nothing stored",
}
# Routes outside the OpenAPI schema.
OUTSIDE_SCHEMA = {
    "/api/schema/": "the API's description (public)",
    "/api/docs/": "the interactive docs (public)",
}
# Staff-only admin, the widget script, the OpenAI-compatible endpoint (API token: test_the_openai_endpoint_*),
# /metrics (staff or its own token: test_metrics_*), the SPA's pages.
OTHER_ROUTES = ("admin/", "widget.js", "v1/", "metrics", "^(?!api/")
SOCKETS = {
    "ws/threads/<int:thread_id>/": "owner only: test_owner_sockets_refuse_other_users_and_anonymous",
    "ws/runs/<int:run_id>/": "owner only: test_owner_sockets_refuse_other_users_and_anonymous",
    "ws/test-runs/<int:test_run_id>/": "owner only: test_owner_sockets_refuse_other_users_and_anonymous",
    "^ws/widget/(?P<public_key>[A-Za-z0-9_-]{1,64})/$": "its own published workflow only: test_a_widget_key_*",
}


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_another_user_gets_nothing(case, world, api, other_api, fake_llm):
    url, body = case.url(world), case.body(world) if case.body else None
    before, calls = snapshot(), len(fake_llm.requests)

    response = send(other_api, case.method, url, body)
    assert response.status_code == 404, (case.id, response.status_code, response.content)
    assert response["Content-Type"].startswith("application/json") and response.json()["detail"]
    assert SECRET not in response.content.decode() and "alice" not in response.content.decode()
    anonymous = send(APIClient(), case.method, url, body)
    assert anonymous.status_code in (401, 403), (case.id, anonymous.status_code)
    assert snapshot() == before, f"{case.id} changed the database for another user"
    assert len(fake_llm.requests) == calls, f"{case.id} called a model for another user"

    # the control: the same request works for the owner
    owner = send(api, case.method, url, body)
    assert owner.status_code == case.owner, (case.id, owner.status_code, owner.content)


def test_lists_and_creates_are_scoped_to_the_caller(world, api, other_api, fake_llm, user, other_user):
    before, calls = snapshot(), len(fake_llm.requests)
    assert other_api.get("/api/workflows/").json()["count"] == 0
    assert other_api.get("/api/providers/").json() == []
    assert other_api.get("/api/secrets/").json() == []
    listing = other_api.post("/api/tools/mcp/", {"url": "http://127.0.0.1:9/mcp", "secret": "orders_key"}, format="json")
    assert listing.status_code == 400 and "no secret named 'orders_key'" in listing.content.decode(), listing.content
    for query in ("", f"?workflow={world.workflow}", f"?thread={world.thread}", "?trigger=manual", "?status=succeeded"):
        assert other_api.get(f"/api/runs/{query}").json()["count"] == 0, query
    for query in ("", f"?workflow={world.workflow}", "?search=secret"):
        assert other_api.get(f"/api/threads/{query}").json()["count"] == 0, query
    for query in ("", f"?workflow={world.workflow}", "?search=customer"):
        assert other_api.get(f"/api/participants/{query}").json()["count"] == 0, query
    # the control: the owner finds each of their threads that said it (the chat's and the test run's)
    from runs.models import Thread

    said = set(Thread.objects.filter(owner=user, messages__content__icontains="secret").values_list("pk", flat=True))
    assert said and {t["id"] for t in api.get("/api/threads/?search=secret").json()["results"]} == said
    # no existence oracle: someone else's object reads exactly like one that does not exist
    missing = other_api.get("/api/workflows/2147483647/")
    assert other_api.get(f"/api/workflows/{world.workflow}/").json() == missing.json()
    assert snapshot() == before

    # mallory's own workflow cannot use alice's provider, nor continue alice's thread
    graph = full_graph(world.provider)
    created = other_api.post("/api/workflows/", {"name": "mallory's", "graph": graph}, format="json").json()
    assert {"node": "agent", "field": "provider", "message": f"provider {world.provider} does not exist"} in created["errors"]
    assert other_api.post(f"/api/workflows/{created['id']}/publish/").status_code == 400
    assert other_api.post(f"/api/workflows/{created['id']}/chat/", {"message": "hi"}, format="json").status_code == 400
    mine = other_api.post(
        "/api/providers/", {"name": "m", "kind": "openai_compatible", "api_base": "http://127.0.0.1:9/v1"}, format="json"
    ).json()
    usable = other_api.post("/api/workflows/", {"name": "mallory's 2", "graph": full_graph(mine["id"])}, format="json").json()
    assert usable["errors"] == []
    for path in ("chat/", "chat/stream/"):
        response = other_api.post(f"/api/workflows/{usable['id']}/{path}", {"message": "hi", "thread": world.thread}, format="json")
        assert response.status_code == 404, (path, response.content)
    assert len(fake_llm.requests) == calls
    # alice's rows are as they were; mallory's are hers
    after = snapshot()
    for label in ("runs.Thread", "runs.Message", "runs.Run", "memory.History", "memory.HistoryMessage", "triggers.Webhook"):
        assert after[label] == before[label], label
    assert {p["id"]: p["owner_id"] for p in after["providers.Provider"]} == {world.provider: user.pk, mine["id"]: other_user.pk}
    assert {w["id"]: w["owner_id"] for w in after["workflows.Workflow"]} == {
        world.workflow: user.pk,
        created["id"]: other_user.pk,
        usable["id"]: other_user.pk,
    }


# --- sockets --------------------------------------------------------------------------------------
def test_owner_sockets_refuse_other_users_and_anonymous(world, user, other_user):
    async def connect(path, cookie):
        comm = communicator(path, origin="http://testserver", cookie=cookie)
        result = await comm.connect(timeout=30)
        await comm.disconnect()
        return result

    alice, mallory = session_cookie(user), session_cookie(other_user)
    paths = [f"/ws/threads/{world.thread}/", f"/ws/runs/{world.run}/", f"/ws/runs/{world.manual_run}/", f"/ws/test-runs/{world.test_run}/"]
    for path in paths:
        assert async_to_sync(connect)(path, None) == (False, 4401), path
        assert async_to_sync(connect)(path, mallory) == (False, 4404), path
        assert async_to_sync(connect)(path, alice)[0] is True, path  # the control
    # the same refusal as for a thread that does not exist: no existence oracle
    assert async_to_sync(connect)("/ws/threads/2147483647/", mallory) == (False, 4404)


# --- widget keys ----------------------------------------------------------------------------------
async def widget_connect(key, **kwargs):
    comm = communicator(f"/ws/widget/{key}/", **kwargs)
    connected, code = await comm.connect(timeout=30)
    if not connected:
        return None, code
    ready = await comm.receive_json_from(timeout=30)
    assert ready["type"] == "ready"
    return comm, ready


async def widget_say(comm, text, thread=None):
    await comm.send_json_to({"type": "message", "text": text, "thread": thread, "client_id": None})
    return await receive_until(comm, is_type("run.finished", "run.failed", "error"))


def test_a_widget_key_reaches_only_its_own_published_workflow(world, api, make_workflow, provider, fake_llm, client):
    from widget import ratelimits

    ratelimits.rate_limit_reset()
    other = publish(api, make_workflow, full_graph(provider.pk, model="other-model"), "alice's other bot")
    draft = make_workflow(full_graph(provider.pk), name="unpublished")
    draft_key = api.get(f"/api/workflows/{draft['id']}/widget/").json()["public_key"]

    async def scenario():
        # a visitor of widget A gets a thread of workflow A
        comm, _ = await widget_connect(world.key)
        messages = await widget_say(comm, "visitor of A")
        token_a = messages[0]["data"]["thread"]
        assert messages[-1]["type"] == "run.finished"
        await comm.disconnect()
        # with the key of workflow B, that thread (or the owner's thread, by id) is not there
        comm, _ = await widget_connect(other.key)
        for token in (token_a, str(world.thread)):
            await comm.send_json_to({"type": "sync", "thread": token, "after": 0})
            refused = (await receive_until(comm, is_type("error", "history")))[-1]
            assert refused["type"] == "error" and refused["data"]["code"] == "unknown_thread", refused
            refused = (await widget_say(comm, "continue it", thread=token))[-1]
            assert refused["type"] == "error" and refused["data"]["code"] == "unknown_thread", refused
        await comm.disconnect()
        # an unpublished workflow's key and an unknown key are refused at the handshake
        assert (await widget_connect(draft_key))[1] == 4409
        assert (await widget_connect("wk_" + "x" * 32))[1] == 4404
        return token_a

    before_b = Run.objects.filter(workflow_id=other.id).count()
    token_a = async_to_sync(scenario)()
    thread_a = Thread.objects.get(widget_token=token_a)
    assert thread_a.workflow_id == world.workflow
    assert Run.objects.get(thread=thread_a).version.number == 1  # the published version
    assert [m.content for m in thread_a.messages.order_by("seq")] == ["visitor of A", "echo: visitor of A"]
    assert Run.objects.filter(workflow_id=other.id).count() == before_b  # nothing ran on B
    assert {r.model for r in fake_llm.requests} <= {"agent-model"}  # nor did B's model answer
    # the public config: the unpublished key is refused, a published one says nothing internal
    assert client.get(f"/api/widget/{draft_key}/").status_code == 409
    config = client.get(f"/api/widget/{world.key}/").json()
    assert set(config) == {"key", "name", "theme"} and str(world.workflow) not in json.dumps(config["theme"])
    # rotating the key retires the old one
    assert api.post(f"/api/workflows/{world.workflow}/widget/").status_code == 201
    assert client.get(f"/api/widget/{world.key}/").status_code == 404
    assert async_to_sync(widget_connect)(world.key)[1] == 4404


# --- webhook URLs ---------------------------------------------------------------------------------
def hook_post(path: str, body: dict, **headers):
    return APIClient().generic(
        "POST",
        path,
        json.dumps(body),
        content_type="application/json",
        **{f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()},
    )


def test_webhook_urls_start_only_their_own_workflow(world, api, make_workflow, provider, fake_llm):
    other = publish(api, make_workflow, full_graph(provider.pk, model="other-model"), "alice's other bot")
    # workflow B has a conversation named "customer-42"
    assert hook_post(hook_path(other.hooks["hook"]) + "?wait=1", {"message": "B's customer", "thread": "customer-42"}).status_code == 200
    thread_b = Thread.objects.get(workflow_id=other.id, external_id="customer-42")
    messages_b = list(thread_b.messages.values_list("seq", "content"))

    # A's URL, with a payload naming B (and B's conversation): it runs A, on A's own conversation
    response = hook_post(hook_path(world.hook), {"message": "hello", "workflow": other.id, "thread": "customer-42"})
    assert response.status_code == 202, response.content
    run = Run.objects.get(pk=response.json()["run"])
    assert run.workflow_id == world.workflow and run.version.workflow_id == world.workflow and run.version.number == 1
    assert run.thread.workflow_id == world.workflow and run.thread_id != thread_b.pk
    assert list(thread_b.messages.values_list("seq", "content")) == messages_b
    assert [r.model for r in fake_llm.requests[-2:]] == ["other-model", "agent-model"]
    # a token that is not a webhook's, or a workflow id in its place, starts nothing
    runs = Run.objects.count()
    for path in ("/api/hooks/wh_not-a-token/", f"/api/hooks/{other.id}/", f"/api/hooks/{world.key}/"):
        assert hook_post(path, {"message": "x"}).status_code == 404, path
    assert Run.objects.count() == runs


def test_webhook_urls_regenerated_retire_the_old_url_and_secret(world, api, make_workflow, provider):
    signed = publish(api, make_workflow, full_graph(provider.pk, require_signature=True), "signed bot")
    old_path, old_secret = hook_path(signed.hooks["hook"]), signed.hooks["hook"]["signing_secret"]

    def signed_post(path, secret, text):
        body = json.dumps({"message": text}).encode()
        timestamp = str(int(time.time()))
        return APIClient().generic(
            "POST",
            path,
            body,
            content_type="application/json",
            **{
                f"HTTP_{TIMESTAMP_HEADER.upper().replace('-', '_')}": timestamp,
                f"HTTP_{SIGNATURE_HEADER.upper().replace('-', '_')}": sign(secret, timestamp, body),
            },
        )

    assert signed_post(old_path, old_secret, "before").status_code == 202
    regenerated = api.post(f"/api/workflows/{signed.id}/webhooks/hook/regenerate/").json()
    new = next(t for t in regenerated if t["node"] == "hook")
    new_path, new_secret = hook_path(new), new["signing_secret"]
    assert new_path != old_path and new_secret != old_secret
    runs = Run.objects.count()
    assert signed_post(old_path, old_secret, "old url").status_code == 404
    assert signed_post(old_path, new_secret, "old url, new secret").status_code == 404
    assert signed_post(new_path, old_secret, "new url, old secret").status_code == 401
    assert Run.objects.count() == runs
    assert signed_post(new_path, new_secret, "after").status_code == 202
    assert Webhook.objects.get(workflow_id=signed.id).token in new_path


# --- nothing unlisted -----------------------------------------------------------------------------
def _routes(patterns, prefix=""):
    from django.urls import URLResolver

    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern)


def _as_schema_path(route: str) -> str:
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: "{id}" if m.group(1) == "pk" else "{%s}" % m.group(1), route)


@pytest.mark.django_db(transaction=False)
def test_every_endpoint_and_socket_has_an_access_check(api):
    from django.urls import get_resolver

    from config.routing import websocket_urlpatterns

    schema = api.get("/api/schema/?format=json").json()
    operations = {
        (method.upper(), path)
        for path, item in schema["paths"].items()
        for method in item
        if method in ("get", "post", "put", "patch", "delete")
    }
    covered = {(case.method, case.path) for case in CASES}
    listed = covered | CALLER_SCOPED | set(PUBLIC)
    assert operations - listed == set(), "endpoints with no access check: add a Case (or list why they are public)"
    assert listed - operations == set(), "listed endpoints that no longer exist"
    assert not covered & (CALLER_SCOPED | set(PUBLIC))

    for route in _routes(get_resolver().url_patterns):
        if route.startswith("api/"):
            path = _as_schema_path(route)
            assert path in schema["paths"] or path in OUTSIDE_SCHEMA, f"{route} is neither in the OpenAPI schema nor listed"
        else:
            assert route.startswith(OTHER_ROUTES), f"{route}: a new route outside the API; check who may reach it"
    assert {str(p.pattern) for p in websocket_urlpatterns} == set(SOCKETS), "a socket route without an access check"


def test_the_admin_is_for_staff_only(other_user, client):
    client.force_login(other_user)
    for path in ("/admin/", "/admin/workflows/workflow/", "/admin/providers/provider/"):
        response = client.get(path)
        assert response.status_code == 302 and "/admin/login/" in response["Location"], path


# --- the OpenAI-compatible endpoint and /metrics --------------------------------------------------
def test_the_openai_endpoint_reaches_only_the_callers_published_workflows(world, api, make_workflow, provider, other_user, fake_llm):
    from rest_framework.authtoken.models import Token

    from providers.services import provider_create
    from tests.openai_client import http_client

    alice = {"Authorization": f"Bearer {Token.objects.get_or_create(user=world_user(world))[0].key}"}
    mallory = {"Authorization": f"Bearer {Token.objects.create(user=other_user).key}"}
    body = {"model": str(world.workflow), "messages": [{"role": "user", "content": "hi"}]}
    with http_client() as http:
        first = http.post("/v1/chat/completions", json=body, headers=alice)
        assert first.status_code == 200, first.text  # the control
        key = first.headers["X-Skein-Thread"]
        before, calls = snapshot(), len(fake_llm.requests)
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Token {alice['Authorization'][7:]}"}):
            for method, url in (("POST", "/v1/chat/completions"), ("GET", "/v1/models"), ("GET", f"/v1/models/{world.workflow}")):
                refused = http.request(method, url, json=body if method == "POST" else None, headers=headers)
                assert refused.status_code == 401 and refused.json()["error"]["type"] == "invalid_request_error", (url, headers)
        theirs = http.post("/v1/chat/completions", json=body, headers=mallory | {"X-Skein-Thread": key})
        missing = http.post("/v1/chat/completions", json={**body, "model": "2147483647"}, headers=mallory)
        assert theirs.status_code == missing.status_code == 404
        assert theirs.json()["error"]["code"] == "model_not_found" and "alice" not in theirs.text
        assert theirs.json()["error"]["message"].replace(str(world.workflow), "N") == missing.json()["error"]["message"].replace(
            "2147483647", "N"
        )
        assert http.get(f"/v1/models/{world.workflow}", headers=mallory).status_code == 404
        assert http.get("/v1/models", headers=mallory).json()["data"] == []
        assert snapshot() == before and len(fake_llm.requests) == calls
        # mallory's own workflow with alice's thread key: a conversation of mallory's workflow only
        own = make_workflow_as(
            other_user, full_graph(provider_create(owner=other_user, name="mine", kind="openai_compatible", api_base=fake_llm.base_url).pk)
        )
        answer = http.post("/v1/chat/completions", json={**body, "model": str(own.pk)}, headers=mallory | {"X-Skein-Thread": key})
        assert answer.status_code == 200, answer.text
    alice_thread = Thread.objects.get(workflow_id=world.workflow, external_id=key)
    assert alice_thread.messages.count() == 2 and Thread.objects.get(workflow=own, external_id=key).owner == other_user


def world_user(world):
    from workflows.models import Workflow

    return Workflow.objects.get(pk=world.workflow).owner


def make_workflow_as(user, graph):
    from workflows import services

    workflow = services.workflow_create(owner=user, name="mallory's bot", graph=graph)
    services.workflow_publish(workflow=workflow, by=user)
    return workflow


def test_metrics_are_for_staff_or_the_metrics_token(client, other_user, django_user_model, settings):
    settings.SKEIN_METRICS_TOKEN = "metrics-secret"
    assert client.get("/metrics").status_code == 401
    for wrong in ("Bearer nope", "Bearer ", "Token metrics-secret", "Basic bWV0cmljcy1zZWNyZXQ="):
        assert client.get("/metrics", HTTP_AUTHORIZATION=wrong).status_code == 403, wrong
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer metrics-secret").status_code == 200
    client.force_login(other_user)
    assert client.get("/metrics").status_code == 403  # an account is not enough
    staff = django_user_model.objects.create_user("ops", password="x", is_staff=True)
    client.force_login(staff)
    assert client.get("/metrics").status_code == 200
    settings.SKEIN_METRICS_TOKEN = ""  # unset: no token opens it, not even an empty one
    client.logout()
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 403
    assert client.post("/metrics", HTTP_AUTHORIZATION="Bearer metrics-secret").status_code == 405
