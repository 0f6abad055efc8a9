"""An agent built in the editor (docs/tools.md): store a secret, drag a chat trigger, an LLM, an
output and an HTTP tool onto the canvas, attach the tool to the LLM's tools port, configure both in
the inspector, then chat: the fake model calls the tool (held by the tool server until the test has
seen it running) and answers with its result. The trace shows the round: the call's arguments and
what the tool answered. Then the other tools' pickers: an MCP server's tools listed to choose from
(and its refusal shown), and a workflow tool's published workflows."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import api_get, api_post, connect, drop_from_palette, log_in, select_node
from tests.fakellm import Reply, calls
from tests.graphs import agent_graph, chat_graph
from tests.toolserver import MCP_TOKEN, ToolServer, mcp_server

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ORDER_SCHEMA = {"type": "object", "properties": {"order": {"type": "integer"}}, "required": ["order"]}
SECRET_VALUE = "s3cret-orders-key"
ANSWER = "Your order 42 has shipped with Posta."


@pytest.fixture(scope="module")
def tool_server():
    server = ToolServer()
    yield server
    server.stop()


def looks_the_order_up(request):
    """The model calls lookup_order first; once it has the result, it answers."""
    if not request.tool_results:
        return Reply(tool_calls=calls(("lookup_order", {"order": 42})))
    return Reply(text=ANSWER)


def wait_saved(page):
    expect(page.get_by_test_id("save-status")).to_have_attribute("data-status", "saved")


def store_secret(page, name: str, value: str):
    form = page.get_by_role("form", name="Store a secret")
    form.get_by_label(re.compile("^Name")).fill(name)
    form.get_by_label("Value").fill(value)
    form.get_by_role("button", name="Store secret").click()


def test_build_an_agent_that_calls_a_tool_and_read_its_round(live_page, user, provider, fake_llm, tool_server):
    page = live_page
    tool_server.reset()
    fake_llm.responder = looks_the_order_up
    log_in(page, "alice", "alice-password")

    # A secret for the tool's header: listed by name, its value never shown; a taken name is refused.
    page.get_by_role("link", name="Secrets").click()
    store_secret(page, "orders_key", SECRET_VALUE)
    expect(page.get_by_test_id("secret-orders_key")).to_contain_text("{{ secrets.orders_key }}")
    store_secret(page, "orders_key", "another value")
    expect(page.get_by_test_id("secret-error")).to_have_text("you already have a secret named 'orders_key'")
    assert SECRET_VALUE not in page.content()

    # Build the agent by drag and drop.
    page.get_by_role("link", name="Workflows").first.click()
    page.get_by_role("button", name="New workflow").click()
    page.wait_for_url(re.compile(r"/workflows/\d+$"))
    workflow_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
    page.locator(".react-flow__controls-zoomout").click()
    page.locator(".react-flow__controls-zoomout").click()
    drop_from_palette(page, "trigger.chat", 110, 140)
    drop_from_palette(page, "llm", 340, 140)
    drop_from_palette(page, "output", 570, 140)
    drop_from_palette(page, "tool.http", 340, 430)
    for node_id in ("chat_1", "llm_1", "output_1", "http_1"):
        expect(page.get_by_test_id(f"node-{node_id}")).to_be_visible()
    connect(page, "chat_1", "output", "llm_1", "input")
    connect(page, "llm_1", "output", "output_1", "input")
    connect(page, "http_1", "tool", "llm_1", "memory")  # a tool is no memory: refused while dragging
    expect(page.locator(".react-flow__edge")).to_have_count(2)
    connect(page, "http_1", "tool", "llm_1", "tools")
    expect(page.locator(".react-flow__edge")).to_have_count(3)
    expect(page.locator(".react-flow__edge.sk-edge-tool")).to_have_count(1)

    select_node(page, "llm_1")
    page.locator('select[name="provider"]').select_option(str(provider.pk))
    expect(page.locator('select[name="model"]')).to_have_value("fake")
    page.locator('textarea[name="system_prompt"]').fill("You look orders up.")

    # The tool: its name, what it does, its arguments' JSON Schema (a typo is flagged in place), the
    # request (its URL a template over the arguments) and a header with the stored secret.
    select_node(page, "http_1")
    page.locator('input[name="name"]').fill("lookup_order")
    page.locator('textarea[name="description"]').fill("Look up an order by its number")
    arguments = page.locator('textarea[name="parameters"]')
    arguments.fill('{"type": "object", "properties": {')
    expect(page.get_by_test_id("json-error")).to_contain_text("Not valid JSON")
    arguments.fill(json.dumps(ORDER_SCHEMA))
    expect(page.get_by_test_id("json-error")).to_have_count(0)
    page.locator('input[name="url"]').fill(tool_server.base + "/held/orders/{{ args.order }}")
    page.get_by_role("button", name="+ Add header").click()
    page.locator('input[name="headers.0.name"]').fill("X-Api-Key")
    page.get_by_test_id("secret-hint").get_by_role("button", name="orders_key").click()
    expect(page.locator('input[name="headers.0.value"]')).to_have_value("{{ secrets.orders_key }}")
    expect(page.get_by_test_id("used-secret")).to_have_text("orders_key")
    wait_saved(page)
    expect(page.get_by_test_id("node-http_1")).to_have_attribute("data-invalid", "false")
    saved = api_get(page, f"/api/workflows/{workflow_id}/")
    assert saved["errors"] == []
    tool = next(n["data"] for n in saved["graph"]["nodes"] if n["id"] == "http_1")
    assert (tool["parameters"], tool["headers"], tool["secrets"]) == (
        ORDER_SCHEMA,
        {"X-Api-Key": "{{ secrets.orders_key }}"},
        ["orders_key"],
    )

    # Chat: while the tool server holds the call, the chat says what is being looked up and the
    # tool node is lit; once it answers, the notice goes and the model's answer comes.
    tool_server.released.clear()
    page.get_by_role("tab", name="Test chat").click()
    chat = page.get_by_test_id("test-chat")
    box = chat.get_by_role("textbox", name="Message")
    box.fill("where is my order 42?")
    box.press("Enter")
    lookup = chat.get_by_test_id("chat-assistant").get_by_test_id("chat-lookup")
    try:
        expect(lookup).to_have_text("Looking up lookup_order…", timeout=30_000)
        expect(page.get_by_test_id("node-http_1")).to_have_attribute("data-run-status", "running")
    finally:
        tool_server.released.set()
    expect(chat.get_by_test_id("chat-assistant")).to_contain_text(ANSWER, timeout=30_000)
    expect(lookup).to_be_hidden()
    expect(page.get_by_test_id("node-http_1")).to_have_attribute("data-run-status", "succeeded")
    expect(chat.get_by_test_id("chat-assistant")).not_to_contain_text("42}")  # no arguments or result in the chat

    # The tool was sent the secret's value; the model was sent the tool's answer.
    [sent] = tool_server.requests
    assert sent["path"] == "/held/orders/42"
    assert {k.lower(): v for k, v in sent["headers"].items()}["x-api-key"] == SECRET_VALUE
    result = '{"order": "42", "status": "shipped", "carrier": {"name": "Posta"}}'
    assert fake_llm.requests[-1].tool_results == [{"role": "tool", "tool_call_id": "call_1", "content": result}]

    # The trace: the round's call with its arguments and result, what the model was sent, the answer.
    page.get_by_role("link", name="View trace →").click()
    page.get_by_test_id("step-llm_1").locator(".step-head").click()
    first = page.get_by_test_id("round-1")
    expect(first).to_contain_text("called lookup_order")
    call = first.get_by_test_id("tool-call-call_1")
    expect(call.get_by_test_id("tool-call-arguments")).to_contain_text('"order": 42')
    expect(call.get_by_test_id("tool-call-result")).to_contain_text('"name": "Posta"')
    first.get_by_text("Sent to the model:").click()
    expect(first.get_by_test_id("offered-tools")).to_contain_text("lookup_order")
    expect(first.get_by_test_id("sent-messages")).to_contain_text("where is my order 42?")
    expect(page.get_by_test_id("round-2")).to_contain_text("answered")
    expect(page.get_by_test_id("rounds")).to_contain_text(ANSWER)
    assert SECRET_VALUE not in page.content()
    assert page.js_errors == []


def test_choose_an_mcp_servers_tools_and_a_published_workflow_to_call(page, user, provider):
    log_in(page, "alice", "alice-password")
    api_post(page, "/api/secrets/", {"name": "mcp_token", "value": MCP_TOKEN})
    orders = api_post(page, "/api/workflows/", {"name": "Order desk", "graph": chat_graph(provider.pk)})
    api_post(page, f"/api/workflows/{orders['id']}/publish/", {})
    api_post(page, "/api/workflows/", {"name": "Unpublished draft", "graph": chat_graph(provider.pk)})
    with mcp_server() as url:
        tools = [
            {"id": "orders", "type": "tool.mcp", "url": url, "secret": "mcp_token"},
            {"id": "desk", "type": "tool.workflow", "name": "ask_the_desk", "description": "Ask the order desk", "workflow": orders["id"]},
        ]
        agent = api_post(page, "/api/workflows/", {"name": "Agent", "graph": agent_graph(provider.pk, tools)})
        page.goto(f"/workflows/{agent['id']}")

        # The MCP server's tools: all of them until some are chosen, from the server's own list.
        select_node(page, "orders")
        expect(page.locator('select[name="secret"]')).to_have_value("mcp_token")
        page.get_by_role("button", name="Refresh tools").click()
        expect(page.get_by_text("2 tools offered")).to_be_visible()
        expect(page.locator('input[name="allowed_tools.lookup_order"]')).to_be_checked()
        page.locator('input[name="allowed_tools.all"]').uncheck()
        page.locator('input[name="allowed_tools.cancel_order"]').uncheck()
        expect(page.locator('input[name="allowed_tools.lookup_order"]')).to_be_disabled()  # the last one stays
        wait_saved(page)
        saved = api_get(page, f"/api/workflows/{agent['id']}/")
        assert next(n["data"] for n in saved["graph"]["nodes"] if n["id"] == "orders")["allowed_tools"] == ["lookup_order"]

        # Without its token the server refuses, and the editor says so in the server's words.
        page.locator('select[name="secret"]').select_option("")
        page.get_by_role("button", name="Refresh tools").click()
        expect(page.get_by_test_id("mcp-error")).to_contain_text(f"could not list the tools of {url}")

    # The workflow tool picks among the published workflows only.
    select_node(page, "desk")
    picker = page.locator('select[name="workflow"]')
    expect(picker).to_have_value(str(orders["id"]))
    expect(picker.locator("option")).to_have_text([f"Order desk · #{orders['id']}"])
    assert page.js_errors == []
