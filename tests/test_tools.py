"""Agents that act (docs/tools.md): an ``llm`` node calls the tools attached to it, through the chat
API, against the fake model server issuing tool calls and a real HTTP API (tests/toolserver.py).
What the model is sent is asserted exactly; its rounds are in the trace and in memory."""

from __future__ import annotations

import json

import pytest

from memory.models import HistoryMessage
from runs.models import RunStep
from tests.fakellm import Reply, calls
from tests.graphs import agent_graph
from tests.toolserver import ToolServer
from tests.toolserver import mcp_server as serve_mcp

pytestmark = pytest.mark.django_db(transaction=True)

ORDER_SCHEMA = {"type": "object", "properties": {"order": {"type": "integer"}}, "required": ["order"]}


@pytest.fixture(scope="module")
def tool_server():
    server = ToolServer()
    yield server
    server.stop()


@pytest.fixture
def api_server(tool_server):
    tool_server.reset()
    return tool_server


def lookup_tool(base: str, **params) -> dict:
    return {
        "id": "lookup",
        "type": "tool.http",
        "name": "lookup_order",
        "description": "Look up an order by its number",
        "parameters": ORDER_SCHEMA,
        "url": base + "/orders/{{ args.order }}",
        **params,
    }


def tool_then_answer(*tool_calls, answer="Your order has shipped."):
    """The model asks for ``tool_calls`` first; once it has their results, it answers."""

    def respond(request):
        if not request.tool_results:
            return Reply(tool_calls=list(tool_calls))
        return Reply(text=answer)

    return respond


def test_the_model_calls_a_tool_and_answers_with_its_result(make_workflow, chat, provider, fake_llm, api_server):
    fake_llm.responder = tool_then_answer(*calls(("lookup_order", {"order": 42})))
    workflow = make_workflow(agent_graph(provider.pk, [lookup_tool(api_server.base)]))
    assert workflow["errors"] == []
    answer = chat(workflow["id"], "where is my order 42?")

    assert (answer["status"], answer["reply"], answer["warnings"]) == ("succeeded", "Your order has shipped.", [])
    first, second = fake_llm.requests
    assert first.tools == ["lookup_order"]
    assert first.body["tools"][0]["function"]["parameters"] == ORDER_SCHEMA
    assert first.messages == [
        {"role": "system", "content": "You are a test agent."},
        {"role": "user", "content": "where is my order 42?"},
    ]
    sent_result = '{"order": "42", "status": "shipped", "carrier": {"name": "Posta"}}'
    assert second.messages[2:] == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order": 42}'}}],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": sent_result},
    ]
    assert [r["path"] for r in api_server.requests] == ["/orders/42"]
    # The trace: each round exactly as sent, each call with its result.
    step = RunStep.objects.get(run_id=answer["run"], node="agent")
    assert step.messages == first.messages
    assert [r["messages"] for r in step.rounds] == [first.messages, second.messages]
    assert step.rounds[0]["tool_calls"][0] | {"duration_ms": 0} == {
        "id": "call_1",
        "name": "lookup_order",
        "arguments": '{"order": 42}',
        "tool_node": "lookup",
        "result": sent_result,
        "error": "",
        "duration_ms": 0,
        "details": {"method": "GET", "url": f"{api_server.base}/orders/42", "status": 200},
    }
    assert step.rounds[1]["tool_calls"] == []


def test_the_next_turn_is_sent_the_earlier_turns_call_and_result(make_workflow, chat, provider, fake_llm, api_server):
    """What a tool returned in turn 1 (a token, say) is in what the model is sent in turn 2."""
    fake_llm.responder = tool_then_answer(*calls(("lookup_order", {"order": 7})), answer="Order 7 ships with Posta.")
    graph = agent_graph(provider.pk, [lookup_tool(api_server.base)], memory={"type": "memory.buffer"})
    workflow = make_workflow(graph)
    first = chat(workflow["id"], "where is order 7?")
    fake_llm.requests.clear()
    fake_llm.responder = lambda request: Reply(text="It is the same order.")
    chat(workflow["id"], "and which carrier was that?", thread=first["thread"])

    [request] = fake_llm.requests
    assert request.messages[1:] == [
        {"role": "user", "content": "where is order 7?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order": 7}'}}],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"order": "7", "status": "shipped", "carrier": {"name": "Posta"}}'},
        {"role": "assistant", "content": "Order 7 ships with Posta."},
        {"role": "user", "content": "and which carrier was that?"},
    ]
    stored = HistoryMessage.objects.filter(history__key=f"thread:{first['thread']}").order_by("seq")
    assert [(m.role, m.tool_call_id, bool(m.tool_calls)) for m in stored][:4] == [
        ("user", "", False),
        ("assistant", "", True),
        ("tool", "call_1", False),
        ("assistant", "", False),
    ]


CALL_7 = {"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order": 7}'}}
RESULT_7 = '{"order": "7", "status": "shipped", "carrier": {"name": "Posta"}}'


@pytest.mark.parametrize("key", ["thread", "participant"])
def test_the_memory_and_participant_pages_show_the_round(make_workflow, api, provider, fake_llm, api_server, key):
    fake_llm.responder = tool_then_answer(*calls(("lookup_order", {"order": 7})), answer="Order 7 ships with Posta.")
    graph = agent_graph(provider.pk, [lookup_tool(api_server.base)], memory={"type": "memory.buffer", "key": key})
    workflow = make_workflow(graph)
    body = {"message": "where is order 7?", "participant": "ada@example.com"}
    answer = api.post(f"/api/workflows/{workflow['id']}/chat/", body, format="json").json()

    expected = [("user", None, None), ("assistant", [CALL_7], None), ("tool", None, "call_1"), ("assistant", None, None)]
    if key == "thread":
        [history] = api.get(f"/api/threads/{answer['thread']}/memory/").json()
        messages = history["messages"]
    else:
        [participant] = api.get("/api/participants/").json()["results"]
        [memory] = api.get(f"/api/participants/{participant['id']}/").json()["memories"]
        messages = memory["messages"]
    assert [(m["role"], m.get("tool_calls"), m.get("tool_call_id")) for m in messages] == expected
    assert messages[2]["content"] == RESULT_7


def test_an_edited_history_keeps_its_round(make_workflow, api, chat, provider, fake_llm, api_server):
    """The memory page's editor sends a round back with the fields it got: the edit is taken, paired."""
    fake_llm.responder = tool_then_answer(*calls(("lookup_order", {"order": 7})), answer="Order 7 ships with Posta.")
    workflow = make_workflow(agent_graph(provider.pk, [lookup_tool(api_server.base)], memory={"type": "memory.buffer"}))
    answer = chat(workflow["id"], "where is order 7?")
    [history] = api.get(f"/api/threads/{answer['thread']}/memory/").json()
    edited = [{k: v for k, v in m.items() if k in ("role", "content", "tool_calls", "tool_call_id")} for m in history["messages"]]
    edited[2]["content"] = "(edited) shipped"
    response = api.put(f"/api/threads/{answer['thread']}/memory/{history['name']}/", {"messages": edited}, format="json")
    assert response.status_code == 200, response.content
    [history] = api.get(f"/api/threads/{answer['thread']}/memory/").json()
    assert [(m["content"], m.get("tool_calls")) for m in history["messages"][1:3]] == [("", [CALL_7]), ("(edited) shipped", None)]


def test_parallel_calls_run_at_once_and_their_results_come_back_in_order(make_workflow, chat, provider, fake_llm, api_server):
    fake_llm.responder = tool_then_answer(*calls(("lookup_order", {"order": 1}), ("lookup_order", {"order": 2})))
    workflow = make_workflow(agent_graph(provider.pk, [lookup_tool(api_server.base)]))
    answer = chat(workflow["id"], "orders 1 and 2?")

    assert answer["status"] == "succeeded"
    second = fake_llm.requests[1]
    assert [m["tool_call_id"] for m in second.tool_results] == ["call_1", "call_2"]
    assert [json.loads(m["content"])["order"] for m in second.tool_results] == ["1", "2"]
    assert sorted(r["path"] for r in api_server.requests) == ["/orders/1", "/orders/2"]


@pytest.mark.parametrize(
    ("tool", "arguments", "error"),
    [
        ({"url": "{{ base }}/fail"}, {"order": 1}, "HTTP 500"),
        ({"url": "{{ base }}/slow?s=10", "timeout_s": 1}, {"order": 1}, "no answer within 1 s"),
        ({"url": "{{ base }}/big?mb=5"}, {"order": 1}, "bytes a tool may read"),
        ({}, {"order": "forty-two"}, "do not match the tool's schema at order: 'forty-two' is not of type 'integer'"),
        ({}, "{not json", "the arguments are not JSON"),
        ({"url": "http://169.254.169.{{ args.order }}/latest/meta-data/"}, {"order": 254}, "link-local or cloud-metadata"),
        ({"url": "{{ base }}/redirect?to=http://169.254.169.254/latest/meta-data/"}, {"order": 1}, "link-local or cloud-metadata"),
    ],
    ids=["http-500", "hanging", "5-mb-answer", "schema", "not-json", "refused-address", "redirect-to-a-refused-address"],
)
def test_a_failing_call_answers_the_model_with_its_error_and_the_turn_goes_on(
    make_workflow, chat, provider, fake_llm, api_server, tool, arguments, error
):
    tool = {k: v.replace("{{ base }}", api_server.base) if isinstance(v, str) else v for k, v in tool.items()}
    fake_llm.responder = tool_then_answer(*calls(("lookup_order", arguments)), answer="Sorry, I could not look it up.")
    workflow = make_workflow(agent_graph(provider.pk, [lookup_tool(api_server.base, **tool)]))
    assert workflow["errors"] == []
    answer = chat(workflow["id"], "where is my order?")

    assert (answer["status"], answer["reply"]) == ("succeeded", "Sorry, I could not look it up.")
    [result] = fake_llm.requests[1].tool_results
    assert result["content"].startswith("Error: ") and error in result["content"], result["content"]
    [call] = RunStep.objects.get(run_id=answer["run"], node="agent").rounds[0]["tool_calls"]
    assert error in call["error"] and call["result"] == ""


def test_past_the_round_bound_the_model_is_asked_to_answer_and_the_run_says_so(make_workflow, chat, provider, fake_llm, api_server):
    def always_a_tool(request):
        if request.body.get("tool_choice") == "none":
            return Reply(text="Here is what I found.")
        return Reply(tool_calls=calls(("lookup_order", {"order": len(request.tool_results) + 1}), prefix=f"r{len(request.tool_results)}"))

    fake_llm.responder = always_a_tool
    workflow = make_workflow(agent_graph(provider.pk, [lookup_tool(api_server.base)], max_tool_rounds=2))
    answer = chat(workflow["id"], "look everything up")

    assert (answer["status"], answer["reply"]) == ("succeeded", "Here is what I found.")
    assert [r.body.get("tool_choice") for r in fake_llm.requests] == [None, None, "none"]
    assert fake_llm.requests[-1].messages[-1] == {
        "role": "system",
        "content": "No more tool calls are possible in this turn: answer now with what you have.",
    }
    assert [w["message"] for w in answer["warnings"]] == [
        "the model used all 2 tool rounds of this turn; it was asked to answer with what it had"
    ]
    assert len(api_server.requests) == 2


def test_an_agent_that_must_call_first_is_asked_for_a_call_in_its_first_round_only(make_workflow, chat, provider, fake_llm, api_server):
    fake_llm.responder = tool_then_answer(*calls(("lookup_order", {"order": 42})))
    workflow = make_workflow(agent_graph(provider.pk, [lookup_tool(api_server.base)], call_tool_first=True))
    answer = chat(workflow["id"], "hello")

    assert (answer["status"], answer["warnings"]) == ("succeeded", [])
    assert [r.body.get("tool_choice") for r in fake_llm.requests] == ["required", None]
    assert [r["path"] for r in api_server.requests] == ["/orders/42"]


def test_secrets_reach_the_server_but_never_the_model_or_the_trace(make_workflow, chat, api, provider, fake_llm, api_server):
    created = api.post("/api/secrets/", {"name": "ORDERS_KEY", "value": "sk-orders-12345"}, format="json")
    assert created.status_code == 201 and "value" not in created.json()
    assert "sk-orders" not in api.get("/api/secrets/").content.decode()
    tool = lookup_tool(
        api_server.base, url=api_server.base + "/echo", headers={"Authorization": "Bearer {{ secrets.ORDERS_KEY }}"}, secrets=["ORDERS_KEY"]
    )
    fake_llm.responder = tool_then_answer(*calls(("lookup_order", {"order": 5})))
    workflow = make_workflow(agent_graph(provider.pk, [tool]))
    assert workflow["errors"] == []
    answer = chat(workflow["id"], "order 5?")

    [seen] = api_server.requests
    assert seen["headers"]["Authorization"] == "Bearer sk-orders-12345"
    # The server echoed the header: the model is sent it redacted, and nothing stored holds it.
    [result] = fake_llm.requests[1].tool_results
    assert "sk-orders-12345" not in result["content"] and "Bearer [secret]" in result["content"]
    trace = api.get(f"/api/runs/{answer['run']}/").content.decode()
    assert "sk-orders-12345" not in trace
    assert not any("sk-orders-12345" in json.dumps(r.body) for r in fake_llm.requests)


def test_a_missing_secret_a_bad_schema_and_a_literal_refused_address_are_field_errors(make_workflow, provider, api_server):
    tools = [
        lookup_tool(api_server.base, headers={"X-Key": "{{ secrets.NOPE }}"}, secrets=["NOPE"]),
        {**lookup_tool(api_server.base), "id": "second", "name": "second_tool", "url": "http://169.254.169.254/latest/"},
    ]
    workflow = make_workflow(agent_graph(provider.pk, tools))
    errors = {(e["node"], e["field"]): e["message"] for e in workflow["errors"]}
    assert errors[("lookup", "secrets")] == "there is no secret named 'NOPE': add it on the Secrets page"
    assert "link-local or cloud-metadata" in errors[("second", "url")]

    broken = make_workflow(agent_graph(provider.pk, [lookup_tool(api_server.base, parameters={"type": "array"})]))
    [problem] = [e for e in broken["errors"] if e["node"] == "lookup"]
    assert problem["field"] == "parameters" and "must describe an object" in problem["message"]
    not_a_schema = make_workflow(agent_graph(provider.pk, [lookup_tool(api_server.base, parameters={"type": "no-such-type"})]))
    [problem] = [e for e in not_a_schema["errors"] if e["node"] == "lookup"]
    assert problem["field"] == "parameters" and "is not a JSON Schema" in problem["message"]


@pytest.mark.parametrize(("policy", "kept"), [("keep", "result"), ("call_only", "note"), ("none", None)])
def test_each_tools_memory_policy_decides_what_the_next_turn_is_sent(make_workflow, chat, provider, fake_llm, api_server, policy, kept):
    fake_llm.responder = tool_then_answer(*calls(("lookup_order", {"order": 3})), answer="Done.")
    graph = agent_graph(provider.pk, [lookup_tool(api_server.base, memory=policy)], memory={"type": "memory.buffer"})
    workflow = make_workflow(graph)
    first = chat(workflow["id"], "order 3?")
    fake_llm.requests.clear()
    fake_llm.responder = lambda request: Reply(text="ok")
    chat(workflow["id"], "thanks", thread=first["thread"])

    sent = fake_llm.requests[0].messages[1:-1]
    if kept is None:
        assert sent == [{"role": "user", "content": "order 3?"}, {"role": "assistant", "content": "Done."}]
        return
    assert sent[1]["tool_calls"][0]["function"] == {"name": "lookup_order", "arguments": '{"order": 3}'}
    content = sent[2]["content"]
    if kept == "result":
        assert json.loads(content)["status"] == "shipped"
    else:
        assert content == "(the result of this call is not kept in memory)"


def test_a_model_without_tools_is_sent_earlier_rounds_as_text(make_workflow, chat, provider, fake_llm, api_server):
    """A history written by an agent, read by a plain LLM (the same named history)."""
    fake_llm.responder = tool_then_answer(*calls(("lookup_order", {"order": 9})), answer="Order 9 shipped.")
    shared = {"type": "memory.buffer", "history": "named", "name": "support"}
    graph = agent_graph(provider.pk, [lookup_tool(api_server.base)], memory=shared)
    workflow = make_workflow(graph)
    first = chat(workflow["id"], "order 9?")
    plain = make_workflow(agent_graph(provider.pk, [], memory=shared))
    assert plain["errors"] == []
    # the same thread's named history, read by a workflow whose llm calls no tools
    from memory.models import History

    History.objects.filter(workflow_id=workflow["id"]).update(workflow_id=plain["id"])
    from runs.models import Thread

    Thread.objects.filter(pk=first["thread"]).update(workflow_id=plain["id"])
    fake_llm.requests.clear()
    fake_llm.responder = lambda request: Reply(text="ok")
    chat(plain["id"], "and now?", thread=first["thread"])

    [request] = fake_llm.requests
    assert request.tools == []
    assert request.messages[1:-1] == [
        {"role": "user", "content": "order 9?"},
        {"role": "assistant", "content": '(called lookup_order with {"order": 9})'},
        {"role": "assistant", "content": '(lookup_order returned: {"order": "9", "status": "shipped", "carrier": {"name": "Posta"}})'},
        {"role": "assistant", "content": "Order 9 shipped."},
    ]


def test_an_http_request_step_passes_its_json_answer_on(make_workflow, chat, provider, fake_llm, api_server):
    from tests.graphs import edge, node

    graph = {
        "nodes": [
            node("chat", "trigger.chat"),
            node("fetch", "http.request", url=api_server.base + "/orders/{{ input }}", result_path="carrier.name"),
            node("say", "template", template="Carrier: {{ input }}"),
            node("out", "output"),
        ],
        "edges": [edge("chat", "fetch"), edge("fetch", "say"), edge("say", "out")],
    }
    workflow = make_workflow(graph)
    assert workflow["errors"] == []
    answer = chat(workflow["id"], "77")
    assert (answer["status"], answer["reply"]) == ("succeeded", "Carrier: Posta")
    assert [r["path"] for r in api_server.requests] == ["/orders/77"]
    assert fake_llm.requests == []


def test_set_history_and_the_memory_api_take_tool_rounds_whole_and_name_a_broken_pair(make_workflow, chat, api, provider, fake_llm):
    fake_llm.responder = lambda request: Reply(text="ok")
    workflow = make_workflow(agent_graph(provider.pk, [], memory={"type": "memory.buffer"}))
    thread = chat(workflow["id"], "hello")["thread"]
    call = {"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": "{}"}}
    whole = [
        {"role": "user", "content": "order?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
        {"role": "assistant", "content": "It shipped."},
    ]
    replaced = api.put(f"/api/threads/{thread}/memory/mem/", {"messages": whole}, format="json")
    assert replaced.status_code == 200, replaced.content
    assert [m.get("tool_call_id") for m in replaced.json()["messages"]] == [None, None, "c1", None]

    for broken, message in [
        (whole[:2] + whole[3:], "tool call 'c1' of message 2 has no result before message 3"),
        ([whole[0], whole[2]], "message 2 answers tool call 'c1', which no earlier assistant message made"),
    ]:
        refused = api.put(f"/api/threads/{thread}/memory/mem/", {"messages": broken}, format="json")
        assert refused.status_code == 400 and refused.json()["messages"] == [message], refused.content
    assert api.get(f"/api/threads/{thread}/memory/mem/").json()["messages"][2]["tool_call_id"] == "c1"  # nothing changed


def publish(api, workflow_id: int) -> None:
    response = api.post(f"/api/workflows/{workflow_id}/publish/")
    assert response.status_code == 201, response.content


def test_a_workflow_tool_runs_another_workflow_with_a_memory_of_its_own(make_workflow, chat, api, provider, fake_llm):
    from runs.models import Run

    desk = make_workflow(agent_graph(provider.pk, [], model="desk-model", memory={"type": "memory.buffer"}), name="order desk")
    publish(api, desk["id"])
    ask = {"id": "desk", "type": "tool.workflow", "workflow": desk["id"], "name": "ask_order_desk", "description": "Ask the order desk"}

    def respond(request):
        if request.model == "desk-model":
            return Reply(text=f"desk saw {len(request.messages)} messages")
        if not request.tool_results:
            return Reply(tool_calls=calls(("ask_order_desk", {"message": f"status of {request.last_user}"})))
        return Reply(text="The desk says: " + request.tool_results[-1]["content"])

    fake_llm.responder = respond
    agent = make_workflow(agent_graph(provider.pk, [ask]))
    assert agent["errors"] == []
    first = chat(agent["id"], "42")
    assert (first["status"], first["reply"]) == ("succeeded", "The desk says: desk saw 2 messages")
    second = chat(agent["id"], "43", thread=first["thread"])
    # The desk's own thread for this conversation kept its memory: it saw the first exchange too.
    assert second["reply"] == "The desk says: desk saw 4 messages"
    desk_runs = Run.objects.filter(workflow_id=desk["id"]).order_by("id")
    assert [r.input for r in desk_runs] == ["status of 42", "status of 43"]
    assert len({r.thread_id for r in desk_runs}) == 1 and desk_runs[0].payload["source"] == "tool"
    # Another conversation of the agent gets a desk thread of its own.
    chat(agent["id"], "44")
    assert Run.objects.filter(workflow_id=desk["id"]).values("thread_id").distinct().count() == 2


def test_workflow_tools_must_not_loop_and_must_name_a_published_workflow_of_yours(make_workflow, api, provider, other_api):
    def asking(target: int) -> dict:
        return {"id": "ask", "type": "tool.workflow", "workflow": target, "name": "ask", "description": "Ask it"}

    first = make_workflow(agent_graph(provider.pk, []), name="first")
    second = make_workflow(agent_graph(provider.pk, [asking(first["id"])]), name="second")
    assert [e["message"] for e in second["errors"] if e["node"] == "ask"] == [
        "'first' is not published yet: publish it to call it as a tool"
    ]
    publish(api, first["id"])
    publish(api, second["id"])
    looped = api.put(
        f"/api/workflows/{first['id']}/",
        {"graph": agent_graph(provider.pk, [asking(second["id"])]), "revision": first["revision"]},
        format="json",
    ).json()
    assert [e["message"] for e in looped["errors"] if e["node"] == "ask"] == [
        "'second' calls this workflow back (through 'second'): workflow tools must not loop"
    ]
    itself = make_workflow(agent_graph(provider.pk, []), name="self")
    selfish = api.put(
        f"/api/workflows/{itself['id']}/",
        {"graph": agent_graph(provider.pk, [asking(itself["id"])]), "revision": itself["revision"]},
        format="json",
    ).json()
    assert [e["message"] for e in selfish["errors"] if e["node"] == "ask"] == ["a workflow cannot call itself as a tool"]
    theirs = other_api.post(
        "/api/workflows/", {"name": "theirs", "graph": agent_graph(provider.pk, [asking(first["id"])])}, format="json"
    ).json()
    assert f"workflow {first['id']} is not one of yours" in [e["message"] for e in theirs["errors"]]


@pytest.fixture(scope="module")
def mcp_server():
    with serve_mcp() as url:
        yield url


def mcp_tool(url: str, **params) -> dict:
    return {"id": "orders", "type": "tool.mcp", "url": url, "secret": "MCP_TOKEN", **params}


def test_the_model_calls_an_mcp_servers_tools(make_workflow, chat, api, provider, fake_llm, mcp_server):
    api.post("/api/secrets/", {"name": "MCP_TOKEN", "value": "Bearer mcp-secret"}, format="json")
    listed = api.post("/api/tools/mcp/", {"url": mcp_server, "secret": "MCP_TOKEN"}, format="json").json()
    assert listed["error"] == "" and [t["name"] for t in listed["tools"]] == ["lookup_order", "cancel_order"]
    assert listed["tools"][0]["parameters"]["properties"]["order_id"]["type"] == "integer"

    fake_llm.responder = tool_then_answer(*calls(("lookup_order", {"order_id": 12}), ("cancel_order", {"order_id": 12})))
    workflow = make_workflow(agent_graph(provider.pk, [mcp_tool(mcp_server)]))
    assert workflow["errors"] == []
    answer = chat(workflow["id"], "order 12?")
    assert answer["status"] == "succeeded" and answer["warnings"] == []
    first, second = fake_llm.requests
    assert first.tools == ["lookup_order", "cancel_order"]
    results = [m["content"] for m in second.tool_results]
    assert results[0] == "order 12: shipped with Posta"
    assert results[1] == "Error: Error executing tool cancel_order"  # the server says it failed (its SDK hides why)

    fake_llm.requests.clear()
    allowed = make_workflow(agent_graph(provider.pk, [mcp_tool(mcp_server, allowed_tools=["lookup_order"])]))
    fake_llm.responder = lambda request: Reply(text="ok")
    chat(allowed["id"], "hi")
    assert fake_llm.requests[0].tools == ["lookup_order"]


def test_an_mcp_server_that_refuses_or_does_not_answer_leaves_its_tools_out_and_says_why(
    make_workflow, chat, api, provider, fake_llm, mcp_server
):
    api.post("/api/secrets/", {"name": "MCP_TOKEN", "value": "Bearer wrong"}, format="json")
    refused = api.post("/api/tools/mcp/", {"url": mcp_server, "secret": "MCP_TOKEN"}, format="json").json()
    assert refused["tools"] == [] and refused["error"].startswith(f"could not list the tools of {mcp_server}")
    nobody = "http://127.0.0.1:9/mcp"
    fake_llm.responder = lambda request: Reply(text="I can answer without it.")
    workflow = make_workflow(agent_graph(provider.pk, [mcp_tool(nobody)]))
    answer = chat(workflow["id"], "hi")
    assert (answer["status"], answer["reply"]) == ("succeeded", "I can answer without it.")
    [warning] = answer["warnings"]
    assert warning["node"] == "orders" and warning["message"].startswith(f"could not list the tools of {nobody}")
    assert warning["message"].endswith("its tools were left out of this turn")
    assert fake_llm.requests[0].tools == []
    missing = api.post("/api/tools/mcp/", {"url": mcp_server, "secret": "NOPE"}, format="json")
    assert missing.status_code == 400 and missing.json()["secret"] == ["you have no secret named 'NOPE'"]


def test_the_stream_shows_each_call_and_a_visitor_sees_only_the_tools_name(client, user, make_workflow, provider, fake_llm, api_server):
    from runs import events, streams
    from tests.test_realtime import sse_post
    from widget.consumers import _for_visitor

    fake_llm.responder = tool_then_answer(*calls(("lookup_order", {"order": 8})))
    workflow = make_workflow(agent_graph(provider.pk, [lookup_tool(api_server.base)]))
    client.force_login(user)
    response, streamed = sse_post(client, f"/api/workflows/{workflow['id']}/chat/stream/", json.dumps({"message": "order 8?"}))
    assert response.status_code == 200
    kinds = [e["type"] for e in streamed]
    assert kinds.index("tool.started") < kinds.index("tool.finished") < kinds.index("run.finished")
    started = next(e["data"] for e in streamed if e["type"] == "tool.started")
    finished = next(e["data"] for e in streamed if e["type"] == "tool.finished")
    assert {k: started[k] for k in ("node", "agent", "tool", "call_id")} == {
        "node": "lookup",
        "agent": "agent",
        "tool": "lookup_order",
        "call_id": "call_1",
    }
    assert finished["status"] == "succeeded" and finished["duration_ms"] >= 0
    # a widget visitor: "looking up …", never the arguments, the result or the nodes
    marks = streams.RunMarks()
    shown = _for_visitor({"type": events.TOOL_FINISHED, "data": {**finished, "run": 3}}, marks, "token")
    assert shown == {"type": "tool.finished", "data": {"run": 3, "tool": "lookup_order", "call_id": "call_1", "status": "succeeded"}}
