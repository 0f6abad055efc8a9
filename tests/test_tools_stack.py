"""Agents on the real stack: daphne, a Celery worker, Redis and PostgreSQL. The worker runs the
tool loop, calls a real HTTP API (tests/toolserver.py) and another published workflow, and the
conversation's second turn is sent the first turn's tool call and result exactly."""

from __future__ import annotations

import pytest

from tests.fakellm import Reply, calls
from tests.graphs import agent_graph
from tests.toolserver import ToolServer, mcp_server

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

ORDER_SCHEMA = {"type": "object", "properties": {"order": {"type": "integer"}}, "required": ["order"]}


@pytest.fixture(scope="module")
def stack(require_postgres, require_redis, tmp_path_factory, django_db_setup, django_db_blocker):
    from django.db import connection

    from tests.stack import full_stack

    with django_db_blocker.unblock():
        name = connection.settings_dict["NAME"]
    with full_stack(name, require_redis, tmp_path_factory.mktemp("tools"), concurrency=8) as running:
        yield running


@pytest.fixture(scope="module")
def orders_api():
    server = ToolServer()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def mcp_orders():
    with mcp_server() as url:
        yield url


@pytest.fixture
def client(stack, user):
    from tests.stack import logged_in_client

    with logged_in_client(stack["base"]) as http:
        yield http


def test_an_agent_acts_on_the_worker_and_remembers_what_it_did(client, fake_llm, orders_api, stack):
    provider = client.post(
        "/api/providers/", json={"name": "fake", "kind": "openai_compatible", "api_base": fake_llm.base_url, "api_key": "k"}
    ).json()
    desk_graph = agent_graph(provider["id"], [], model="desk-model")
    desk = client.post("/api/workflows/", json={"name": "desk", "graph": desk_graph}).json()
    assert client.post(f"/api/workflows/{desk['id']}/publish/").status_code == 201
    tools = [
        {
            "id": "lookup",
            "type": "tool.http",
            "name": "lookup_order",
            "description": "Look up an order",
            "parameters": ORDER_SCHEMA,
            "url": orders_api.base + "/orders/{{ args.order }}",
        },
        {"id": "desk", "type": "tool.workflow", "workflow": desk["id"], "name": "ask_desk", "description": "Ask the order desk"},
    ]
    agent = client.post(
        "/api/workflows/", json={"name": "agent", "graph": agent_graph(provider["id"], tools, memory={"type": "memory.buffer"})}
    ).json()
    assert agent["errors"] == []

    def respond(request):
        if request.model == "desk-model":
            return Reply(text="the desk confirms token T-991")
        if request.last_user == "order 5?" and not request.tool_results:
            return Reply(tool_calls=calls(("lookup_order", {"order": 5}), ("ask_desk", {"message": "confirm order 5"})))
        return Reply(text="done")

    fake_llm.responder = respond
    first = client.post(f"/api/workflows/{agent['id']}/chat/", json={"message": "order 5?"}).json()
    assert (first["status"], first["reply"], first["warnings"]) == ("succeeded", "done", []), stack["worker"].output()
    second = client.post(f"/api/workflows/{agent['id']}/chat/", json={"message": "what was the token?", "thread": first["thread"]}).json()
    assert second["status"] == "succeeded"

    last = [r for r in fake_llm.requests if r.model == "agent-model"][-1]
    assert last.last_user == "what was the token?"
    results = [m["content"] for m in last.tool_results]
    assert results == ['{"order": "5", "status": "shipped", "carrier": {"name": "Posta"}}', "the desk confirms token T-991"]
    assert [r["path"] for r in orders_api.requests] == ["/orders/5"]
    trace = client.get(f"/api/runs/{first['run']}/").json()
    [agent_step] = [s for s in trace["steps"] if s["node"] == "agent"]
    assert [len(r["tool_calls"]) for r in agent_step["rounds"]] == [2, 0]
    assert {c["tool_node"] for c in agent_step["rounds"][0]["tool_calls"]} == {"lookup", "desk"}


def test_on_the_worker_failing_hanging_huge_and_misused_tools_answer_the_model_and_the_bound_holds(
    client, fake_llm, orders_api, mcp_orders
):
    """One round of parallel calls that each fail their own way (HTTP 500, no answer within the
    tool's bound, a 5 MB answer, arguments off the schema, a failing MCP tool) beside one that
    works: each result goes back to the model, the turn succeeds; then the round bound holds."""
    provider = client.post(
        "/api/providers/", json={"name": "fake", "kind": "openai_compatible", "api_base": fake_llm.base_url, "api_key": "k"}
    ).json()
    assert client.post("/api/secrets/", json={"name": "MCP_TOKEN", "value": "Bearer mcp-secret"}).status_code == 201

    def http_tool(name: str, path: str, **params) -> dict:
        return {
            "id": name,
            "type": "tool.http",
            "name": name,
            "description": f"calls {path}",
            "parameters": ORDER_SCHEMA,
            "url": orders_api.base + path,
            **params,
        }

    tools = [
        http_tool("lookup", "/orders/{{ args.order }}"),
        http_tool("broken", "/fail"),
        http_tool("hanging", "/slow?s=30", timeout_s=1),
        http_tool("huge", "/big?mb=5"),
        {"id": "orders", "type": "tool.mcp", "url": mcp_orders, "secret": "MCP_TOKEN"},
    ]
    graph = agent_graph(provider["id"], tools, max_tool_rounds=2)
    agent = client.post("/api/workflows/", json={"name": "rough day", "graph": graph}).json()
    assert agent["errors"] == []

    every_call = calls(
        ("lookup", {"order": 1}),
        ("broken", {"order": 1}),
        ("hanging", {"order": 1}),
        ("huge", {"order": 1}),
        ("lookup", {"order": "one"}),
        ("lookup_order", {"order_id": 3}),
        ("cancel_order", {"order_id": 3}),
    )
    fake_llm.responder = lambda request: Reply(text="sorry") if request.tool_results else Reply(tool_calls=every_call)
    answer = client.post(f"/api/workflows/{agent['id']}/chat/", json={"message": "check everything"}).json()
    assert (answer["status"], answer["reply"], answer["warnings"]) == ("succeeded", "sorry", [])
    results = [m["content"] for m in fake_llm.requests[-1].tool_results]
    assert results[0] == '{"order": "1", "status": "shipped", "carrier": {"name": "Posta"}}'
    assert results[1].startswith("Error: HTTP 500")
    assert results[2].startswith("Error: ") and "no answer within 1 s" in results[2]
    assert results[3].startswith("Error: ") and "bytes a tool may read" in results[3]
    assert results[4].startswith("Error: the arguments do not match the tool's schema at order")
    assert results[5:] == ["order 3: shipped with Posta", "Error: Error executing tool cancel_order"]

    fake_llm.requests.clear()
    fake_llm.responder = lambda request: Reply(tool_calls=calls(("lookup", {"order": 2})))  # it never stops asking
    bounded = client.post(f"/api/workflows/{agent['id']}/chat/", json={"message": "again"}).json()
    assert bounded["status"] == "succeeded"
    assert [w["message"] for w in bounded["warnings"]] == [
        "the model used all 2 tool rounds of this turn; it was asked to answer with what it had",
        "the model asked for a tool after the last allowed round; its text was taken as the answer",
    ]
    assert [r.body.get("tool_choice") for r in fake_llm.requests] == [None, None, "none"]
