"""Agents on the real stack: daphne, a Celery worker, Redis and PostgreSQL. The worker runs the
tool loop, calls a real HTTP API (tests/toolserver.py) and another published workflow, and the
conversation's second turn is sent the first turn's tool call and result exactly."""

from __future__ import annotations

import pytest

from tests.fakellm import Reply, calls
from tests.graphs import agent_graph
from tests.toolserver import ToolServer

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
