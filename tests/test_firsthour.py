"""A first hour that works (issue 15), through the API: save-time validation that says what to do
(credentials, a chat nobody answers, one problem reported once), models that work where the app
runs (the installation's default, the models a provider serves), replies cut at max_tokens marked
as cut, the draft's unpublished changes, whether schedules fire, and the offline API docs."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from engine.interfaces import ModelRef
from engine.registry import NodeError
from engine.validation import validate
from providers import llm
from providers import services as provider_services
from runs import services as runs
from runs import turns
from runs.models import Run
from tests.fakellm import Reply
from tests.graphs import chat_graph, edge, node
from triggers import beat
from workflows import services
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)

NO_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_API_BASE")


@pytest.fixture
def no_keys(monkeypatch):
    """An installation with no provider key in its environment."""
    for name in NO_KEYS:
        monkeypatch.delenv(name, raising=False)


def plain_graph(model: str, provider: int | None = None) -> dict:
    graph = chat_graph(1, model=model)
    graph["nodes"][1]["data"]["provider"] = provider
    return graph


def errors_of(workflow: dict, node_id: str) -> list[dict]:
    return [e for e in workflow["errors"] if e["node"] == node_id]


# --- credentials at save time -----------------------------------------------------------------------
def test_a_model_with_no_key_anywhere_is_an_error_on_its_model_field(no_keys, make_workflow, api, fake_llm, monkeypatch):
    workflow = make_workflow(plain_graph("gpt-4o-mini"))
    [problem] = errors_of(workflow, "agent")
    assert problem["field"] == "model"
    assert problem["message"] == "no API key for 'gpt-4o-mini': add a provider on the Providers page or set OPENAI_API_KEY"
    # it blocks running and publishing, with the same words, before any model is called
    chat = api.post(f"/api/workflows/{workflow['id']}/chat/", {"message": "hi"}, format="json")
    assert chat.status_code == 400 and problem in chat.json()["errors"]
    assert api.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 400
    assert Run.objects.count() == 0

    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    assert api.get(f"/api/workflows/{workflow['id']}/").json()["errors"] == []


def test_each_service_names_its_own_key(no_keys, make_workflow):
    anthropic = make_workflow(plain_graph("claude-haiku-4-5"))
    assert [e["message"] for e in errors_of(anthropic, "agent")] == [
        "no API key for 'claude-haiku-4-5': add a provider on the Providers page or set ANTHROPIC_API_KEY"
    ]
    unknown = make_workflow(plain_graph("agent-model"))
    [problem] = errors_of(unknown, "agent")
    assert problem["field"] == "model" and "choose a provider" in problem["message"] and "'agent-model'" in problem["message"]
    # models that need no key: the bundled one, and Ollama's (a local server)
    for model in ("skein-local/smollm2", "ollama/llama3.2"):
        assert make_workflow(plain_graph(model))["errors"] == [], model


def test_a_provider_without_a_key_is_an_error_unless_it_needs_none(no_keys, make_workflow, api, user, monkeypatch):
    keyless = provider_services.provider_create(owner=user, name="OpenAI", kind="openai")
    [problem] = errors_of(make_workflow(plain_graph("gpt-4o-mini", keyless.pk)), "agent")
    assert problem == {
        "node": "agent",
        "field": "model",
        "message": "the provider 'OpenAI' has no API key: add one on the Providers page or set OPENAI_API_KEY",
    }
    keyed = provider_services.provider_create(owner=user, name="OpenAI 2", kind="openai", api_key="sk-stored")
    own_server = provider_services.provider_create(owner=user, name="my vLLM", kind="openai", api_base="http://127.0.0.1:9/v1")
    local = provider_services.provider_create(owner=user, name="local", kind="local")
    for provider, model in ((keyed, "gpt-4o-mini"), (own_server, "my-model"), (local, "smollm2")):
        assert make_workflow(plain_graph(model, provider.pk))["errors"] == [], provider.name
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert make_workflow(plain_graph("gpt-4o-mini", keyless.pk))["errors"] == []


def test_every_model_node_is_checked(no_keys, make_workflow, provider):
    """The router's model and a summarizer's model (llm.model) too, each on its own node."""
    graph = chat_graph(provider.pk, memory={"type": "memory.summary", "llm_source": "external"}, summarizer={"model": "gpt-4o-mini"})
    graph["nodes"].append(node("route", "router.llm", 0, 300, model="claude-haiku-4-5"))
    graph["edges"].append(edge("chat", "route"))
    graph["nodes"].append(node("route_out", "output", 300, 300))
    graph["edges"].append(edge("route", "route_out", "general", "input"))
    workflow = make_workflow(graph)
    assert {(e["node"], e["field"]) for e in workflow["errors"]} == {("summarizer", "model"), ("route", "model")}


def test_a_call_with_no_key_fails_at_once_in_one_line_that_says_what_to_do(no_keys, make_workflow, api, user, fake_llm):
    """A published workflow whose provider lost its key: the run fails before litellm is reached
    (no raw litellm text, no retries), with the reason and what to do."""
    provider = provider_services.provider_create(owner=user, name="OpenAI", kind="openai", api_key="sk-stored")
    graph = plain_graph("gpt-4o-mini", provider.pk)
    graph["nodes"].append(node("hook", "trigger.webhook", 0, 200))
    graph["edges"].append(edge("hook", "agent"))
    workflow = Workflow.objects.get(pk=make_workflow(graph)["id"])
    version = services.workflow_publish(workflow=workflow)
    provider_services.provider_update(provider=provider, api_key="")

    run = runs.run_create(version=version, trigger="webhook", input_text="hi", trigger_node="hook")
    turns.turn_process(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "failed"
    assert run.error == (
        "agent: model 'gpt-4o-mini' cannot be called: "
        "the provider 'OpenAI' has no API key: add one on the Providers page or set OPENAI_API_KEY"
    )
    assert "\n" not in run.error and "Missing credentials" not in run.error

    with pytest.raises(NodeError) as raised:
        llm.complete(ModelRef(model="gpt-4o-mini"), None, [{"role": "user", "content": "hi"}])
    assert "set OPENAI_API_KEY" in str(raised.value) and llm.error_reason(raised.value.__cause__)[0] == "auth"


def test_model_errors_are_one_line():
    import litellm

    raw = litellm.BadRequestError(message="first line of the trouble\n  Traceback...\n" + "x" * 5000, model="m", llm_provider="openai")
    text = llm.describe_error(raw, ModelRef(model="m"))
    assert "\n" not in text and text.startswith("model 'm' failed: the provider refused the request: first line of the trouble")
    long = llm.describe_error(litellm.BadRequestError(message="y" * 5000, model="m", llm_provider="openai"), ModelRef(model="m"))
    assert len(long) < 400 and long.endswith("…")


# --- a chat nobody answers; one problem reported once ----------------------------------------------
def test_a_chat_trigger_that_reaches_no_output_is_an_error(make_workflow, api, provider, fake_llm):
    graph = chat_graph(provider.pk)
    graph["nodes"] = [n for n in graph["nodes"] if n["id"] != "out"]
    graph["edges"] = [e for e in graph["edges"] if e["target"] != "out"]
    workflow = make_workflow(graph)
    assert errors_of(workflow, "chat") == [
        {
            "node": "chat",
            "field": "output",
            "message": "nothing answers a chat message here: connect this trigger (through an LLM) to an Output node",
        }
    ]
    # refused before any token is spent (today's "success" with an empty bubble)
    assert api.post(f"/api/workflows/{workflow['id']}/chat/", {"message": "hi"}, format="json").status_code == 400
    assert fake_llm.requests == []


def test_a_chat_trigger_is_answered_through_any_branch():
    """An output reached on one route is enough; an output reached only from another trigger is not."""
    graph = {
        "nodes": [
            node("chat", "trigger.chat"),
            node("hook", "trigger.webhook"),
            node("route", "router.static", routes=[{"name": "a", "match": "a"}, {"name": "b", "match": ""}], default_route="b"),
            node("t", "template", template="{{ input }}"),
            node("out", "output"),
            node("hook_out", "output"),
        ],
        "edges": [edge("chat", "route"), edge("route", "t", "a"), edge("t", "out"), edge("hook", "hook_out")],
    }
    issues = validate(graph)
    assert [i for i in issues if i["node"] == "chat"] == []
    assert {(i["node"], i["field"]) for i in issues} == {("route", "routes")}  # route b goes nowhere: its own check
    graph["edges"] = [edge("hook", "route"), edge("route", "t", "a"), edge("route", "t", "b"), edge("t", "out"), edge("hook", "hook_out")]
    assert [i["field"] for i in validate(graph) if i["node"] == "chat"] == ["output"]


def test_an_invalid_node_is_reported_once_not_again_on_the_nodes_behind_it(make_workflow, provider):
    graph = chat_graph(provider.pk, memory={"type": "memory.window", "max_messages": 0})
    graph["nodes"][1]["data"]["temperature"] = 5
    workflow = make_workflow(graph)
    assert {(e["node"], e["field"]) for e in workflow["errors"]} == {("agent", "temperature"), ("mem", "max_messages")}
    # an unknown node type in the middle of the flow: only that node
    graph = chat_graph(provider.pk)
    graph["nodes"].append(node("mystery", "plugin.mystery", 300, 0))
    graph["edges"] = [edge("chat", "agent"), edge("agent", "mystery"), edge("mystery", "out")]
    assert [(e["node"], e["field"]) for e in validate(graph)] == [("mystery", "type")]


def test_a_resource_edge_of_an_invalid_node_carries_no_flow():
    """An invalid memory attached to an LLM does not make the LLM (or the output behind it) reachable."""
    graph = {
        "nodes": [
            node("chat", "trigger.chat"),
            node("mem", "memory.window", max_messages=0),
            node("agent", "llm", model="skein-local/smollm2"),
            node("out", "output"),
        ],
        "edges": [edge("mem", "agent", "memory", "memory"), edge("agent", "out")],
    }
    issues = {(i["node"], i["field"]) for i in validate(graph)}
    assert ("out", "input") in issues and ("chat", "output") in issues and ("mem", "max_messages") in issues


# --- the model a new node gets, and what a provider serves ------------------------------------------
def default(api) -> dict:
    response = api.get("/api/providers/default/")
    assert response.status_code == 200, response.content
    return response.json()


def test_with_no_keys_new_nodes_get_the_bundled_model(no_keys, api, user, make_workflow):
    assert default(api) == {"provider": None, "model": "skein-local/smollm2", "environment_models": []}
    local = provider_services.provider_create(owner=user, name="local", kind="local")
    choice = default(api)
    assert (choice["provider"], choice["model"]) == (local.pk, "smollm2")
    # a node made from it is valid as dropped (nothing to fix before the first chat)
    assert make_workflow(plain_graph(choice["model"], choice["provider"]))["errors"] == []


def test_a_configured_provider_gives_its_default_model(no_keys, api, user, fake_llm, monkeypatch):
    local = provider_services.provider_create(owner=user, name="local", kind="local")
    keyless = provider_services.provider_create(owner=user, name="no key", kind="openai")
    assert default(api)["provider"] == local.pk  # a provider that cannot be called is no default
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    choice = default(api)
    assert (choice["provider"], choice["model"]) == (keyless.pk, "gpt-4o-mini")  # the environment's key serves it
    assert choice["environment_models"][0] == "gpt-4o-mini" and "gpt-4o" in choice["environment_models"]
    keyless.delete()
    assert (default(api)["provider"], default(api)["model"]) == (None, "gpt-4o-mini")
    server = provider_services.provider_create(owner=user, name="my server", kind="openai_compatible", api_base=fake_llm.base_url)
    assert default(api)["provider"] == server.pk and default(api)["model"] == "fake"  # the first model it serves
    anthropic = provider_services.provider_create(owner=user, name="Anthropic", kind="anthropic", api_key="sk-ant")
    assert (default(api)["provider"], default(api)["model"]) == (anthropic.pk, "claude-haiku-4-5")


def test_finding_the_default_asks_few_servers(no_keys, api, user, fake_llm):
    """Servers that list no model are asked at most three times (the editor waits for the answer)."""
    asked = []
    fake_llm.get_responder = lambda path: asked.append(path) or (404, "application/json", b"{}")
    for i in range(5):
        provider_services.provider_create(owner=user, name=f"empty {i}", kind="openai_compatible", api_base=fake_llm.base_url)
    assert default(api)["model"] == "skein-local/smollm2"
    assert len(asked) == 3


def test_the_default_model_is_the_callers(no_keys, api, other_user, fake_llm):
    provider_services.provider_create(owner=other_user, name="mallory's", kind="openai_compatible", api_base=fake_llm.base_url)
    assert default(api)["provider"] is None


def models(api, provider) -> dict:
    response = api.get(f"/api/providers/{provider.pk}/models/")
    assert response.status_code == 200, response.content
    return response.json()


def test_each_provider_lists_the_models_it_serves(no_keys, api, user, fake_llm):
    server = provider_services.provider_create(owner=user, name="s", kind="openai_compatible", api_base=fake_llm.base_url, api_key="k")
    assert models(api, server) == {"models": ["fake"], "error": "", "reason": ""}
    ollama = provider_services.provider_create(owner=user, name="o", kind="ollama", api_base=fake_llm.base_url.removesuffix("/v1"))
    assert models(api, ollama) == {"models": ["llama3.2:latest", "qwen2.5:0.5b"], "error": "", "reason": ""}
    local = provider_services.provider_create(owner=user, name="l", kind="local")
    assert models(api, local) == {"models": ["smollm2"], "error": "", "reason": ""}
    openai = models(api, provider_services.provider_create(owner=user, name="oa", kind="openai", api_key="k"))
    assert openai["models"][0] == "gpt-4o-mini" and "gpt-4.1" in openai["models"] and not any("/" in m for m in openai["models"])
    anthropic = models(api, provider_services.provider_create(owner=user, name="an", kind="anthropic", api_key="k"))
    assert anthropic["models"][0] == "claude-haiku-4-5" and all(m.startswith("claude") for m in anthropic["models"])


def test_a_server_that_cannot_list_its_models_says_why(api, user, fake_llm):
    server = provider_services.provider_create(owner=user, name="s", kind="openai_compatible", api_base=fake_llm.base_url)
    fake_llm.get_responder = lambda path: (200, "text/html", b"<html><body>Welcome to nginx!</body></html>")
    listed = models(api, server)
    assert listed["models"] == [] and listed["reason"] == "not_openai_compatible" and "OpenAI-compatible API" in listed["error"]
    fake_llm.get_responder = lambda path: (401, "application/json", b'{"error": "no"}')
    assert models(api, server)["reason"] == "auth"
    fake_llm.get_responder = lambda path: (200, "application/json", b'{"data": [' + b'{"id": "m"},' * 200_000 + b'{"id": "m"}]}')
    assert models(api, server) == {"models": [], "error": "the call failed", "reason": "error"}  # a hostile answer is bounded
    down = provider_services.provider_create(owner=user, name="d", kind="openai_compatible", api_base="http://127.0.0.1:9/v1")
    assert models(api, down)["reason"] == "unreachable"
    assert api.get("/api/providers/2147483647/models/").status_code == 404


# --- replies cut at max_tokens -----------------------------------------------------------------------
def test_a_reply_cut_at_max_tokens_is_marked_cut_in_the_trace_and_the_stream(make_workflow, api, provider, fake_llm):
    workflow = make_workflow(chat_graph(provider.pk))
    fake_llm.responder = lambda request: Reply(text="The answer is that the", finish_reason="length")
    turn = api.post(f"/api/workflows/{workflow['id']}/chat/", {"message": "tell me"}, format="json").json()
    steps = {s["node"]: s for s in api.get(f"/api/runs/{turn['run']}/").json()["steps"]}
    assert steps["agent"]["details"]["finish_reason"] == "length" and steps["agent"]["details"]["cut"] is True
    assert steps["out"]["details"]["cut"] is True

    response = api.post(f"/api/workflows/{workflow['id']}/chat/stream/", {"message": "again"}, format="json")
    finished = stream_ending(response)
    assert finished["reply"] == "The answer is that the" and finished["cut"] is True

    fake_llm.responder = lambda request: Reply(text="Done.")
    finished = stream_ending(api.post(f"/api/workflows/{workflow['id']}/chat/stream/", {"message": "short"}, format="json"))
    assert finished["cut"] is False
    run = Run.objects.order_by("-id").first()
    assert "cut" not in run.steps.get(node="agent").details and run.steps.get(node="agent").details["finish_reason"] == "stop"


def stream_ending(response) -> dict:
    from asgiref.sync import async_to_sync

    async def read():
        return b"".join([chunk async for chunk in response.streaming_content])

    blocks = async_to_sync(read)().decode().split("\n\n")
    [data] = [b.split("data: ", 1)[1] for b in blocks if b.startswith("event: run.finished")]
    return json.loads(data)


# --- unpublished changes ------------------------------------------------------------------------------
def test_the_draft_says_when_it_differs_from_the_published_version(make_workflow, api, provider):
    workflow = make_workflow(chat_graph(provider.pk))
    assert workflow["unpublished_changes"] is False  # nothing published: nothing to differ from
    api.post(f"/api/workflows/{workflow['id']}/publish/")
    current = api.get(f"/api/workflows/{workflow['id']}/").json()
    assert current["unpublished_changes"] is False

    moved = json.loads(json.dumps(current["graph"]))
    moved["nodes"][0]["position"] = {"x": 999, "y": 999}
    current = api.put(f"/api/workflows/{workflow['id']}/", {"graph": moved, "revision": current["revision"]}, format="json").json()
    assert current["unpublished_changes"] is False  # where a node sits changes nothing it does

    edited = json.loads(json.dumps(current["graph"]))
    edited["nodes"][1]["data"]["system_prompt"] = "Be terse."
    current = api.put(f"/api/workflows/{workflow['id']}/", {"graph": edited, "revision": current["revision"]}, format="json").json()
    assert current["unpublished_changes"] is True
    api.post(f"/api/workflows/{workflow['id']}/publish/")
    assert api.get(f"/api/workflows/{workflow['id']}/").json()["unpublished_changes"] is False


# --- whether schedules fire ---------------------------------------------------------------------------
def schedule_trigger(api, make_workflow, provider) -> dict:
    graph = chat_graph(provider.pk)
    graph["nodes"].append(node("tick", "trigger.schedule", 0, 200, interval_seconds=60, input="tick"))
    graph["edges"].append(edge("tick", "agent"))
    workflow = make_workflow(graph)
    api.post(f"/api/workflows/{workflow['id']}/publish/")
    return workflow


def scheduler_of(api, workflow) -> dict:
    triggers = api.get(f"/api/workflows/{workflow['id']}/").json()["triggers"]
    return next(t for t in triggers if t["type"] == "trigger.schedule")["scheduler"]


def test_the_triggers_say_when_no_beat_has_ticked(api, make_workflow, provider):
    from django.core.cache import cache

    cache.delete(beat.HEARTBEAT_KEY)
    workflow = schedule_trigger(api, make_workflow, provider)
    assert scheduler_of(api, workflow) == {
        "running": False,
        "message": "schedules are not running: start Skein with `make run` (its server fires them)",
    }
    with override_settings(FULL_MODE=True):
        assert scheduler_of(api, workflow)["message"] == "schedules are not running: start `make beat` (or the beat service)"
    beat.heartbeat_record()  # what each pass of the scheduler does
    assert scheduler_of(api, workflow) == {"running": True, "message": ""}
    cache.delete(beat.HEARTBEAT_KEY)  # the mark expired (SKEIN_BEAT_STALE_S): no beat seen lately
    assert scheduler_of(api, workflow)["running"] is False


# --- the API docs, offline ----------------------------------------------------------------------------
def test_the_api_docs_load_swagger_ui_from_the_app(client):
    page = client.get("/api/docs/").content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in page
    assert "cdn.jsdelivr" not in page and "unpkg" not in page and "@latest" not in page
    assert client.get("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js").status_code == 200
