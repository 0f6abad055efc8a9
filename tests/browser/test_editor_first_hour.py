"""The rough edges a newcomer meets in the editor (issue 15): a dropped node on the installation's
default model and a model picker fed by the provider, the draft's unpublished changes, a node's
last-run error that clears when the node is edited and never covers its neighbour, a test chat
that survives a reload (even mid-turn), a message over the limit, the empty name, a cut reply."""

from __future__ import annotations

import re
import threading

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import api_get, api_post, drop_from_palette, log_in, select_node
from tests.fakellm import Reply
from tests.graphs import chat_graph
from tests.stack import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def provider(page, browser_user, fake_llm):
    log_in(page)
    return api_post(page, "/api/providers/", {"name": "fake", "kind": "openai_compatible", "api_base": fake_llm.base_url, "api_key": "k"})


def open_workflow(page, graph: dict, name: str = "Bot") -> dict:
    workflow = api_post(page, "/api/workflows/", {"name": name, "graph": graph})
    page.goto(f"/workflows/{workflow['id']}")
    expect(page.locator(".react-flow__node")).to_have_count(len(graph["nodes"]))
    return workflow


def publish(page):
    page.get_by_role("button", name=re.compile("^Publish")).click()
    panel = page.get_by_role("dialog", name="Share & triggers")
    expect(panel).to_be_visible()
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()


def wait_saved(page):
    expect(page.get_by_test_id("save-status")).to_have_attribute("data-status", "saved")


def test_a_dropped_node_is_on_the_default_model_and_the_picker_follows_the_provider(page, provider):
    local = api_post(page, "/api/providers/", {"name": "local", "kind": "local"})
    workflow = open_workflow(page, {"nodes": [], "edges": []})
    default = api_get(page, "/api/providers/default/")
    assert (default["provider"], default["model"]) == (provider["id"], "fake")  # the newest provider that can be called

    drop_from_palette(page, "llm", 300, 200)
    select_node(page, "llm_1")
    expect(page.locator('select[name="provider"]')).to_have_value(str(provider["id"]))
    model = page.locator('select[name="model"]')
    expect(model).to_have_value("fake")
    expect(model.locator("option")).to_have_text(["fake", "Other model (type its name)…"])  # what the server serves

    page.locator('select[name="provider"]').select_option(str(local["id"]))  # a provider brings a model it serves
    expect(model).to_have_value("smollm2")
    wait_saved(page)
    saved = api_get(page, f"/api/workflows/{workflow['id']}/")
    assert saved["graph"]["nodes"][0]["data"].items() >= {"provider": local["id"], "model": "smollm2"}.items()

    # No provider, and no key in the server's environment: the form and the node say what to do.
    page.locator('select[name="provider"]').select_option("")
    expect(page.locator('[data-field="model"]')).to_contain_text("No API key is set in the server's environment")
    wait_saved(page)
    expect(page.locator('[data-field="model"] .field-error')).to_contain_text("choose a provider")
    expect(page.get_by_test_id("node-llm_1").get_by_test_id("node-error")).to_contain_text("model: no provider is chosen")
    assert page.js_errors == []


def test_unpublished_changes_and_the_empty_name(page, provider):
    workflow = open_workflow(page, chat_graph(provider["id"]))
    publish(page)
    banner = page.get_by_test_id("unpublished-banner")
    expect(banner).to_have_count(0)
    select_node(page, "agent")
    page.locator('textarea[name="system_prompt"]').fill("Be terse.")
    expect(banner).to_contain_text("the webhooks, schedules and widget still run version 1")
    publish(page)
    expect(banner).to_have_count(0)
    # moving a node changes nothing it does
    box = page.get_by_test_id("node-out").locator(".sk-node-title").bounding_box()
    page.mouse.move(box["x"] + 10, box["y"] + 5)
    page.mouse.down()
    page.mouse.move(box["x"] + 10, box["y"] + 125, steps=8)
    page.mouse.up()
    moved = lambda: next(n for n in api_get(page, f"/api/workflows/{workflow['id']}/")["graph"]["nodes"] if n["id"] == "out")["position"]  # noqa: E731
    wait_for(lambda: moved() != {"x": 400, "y": 0}, timeout=20, what="the moved node saved")
    expect(banner).to_have_count(0)

    # An empty name: the page says why it is not saved, and the graph's edits are saved all the same.
    select_node(page, "agent")
    page.get_by_label("Workflow name").fill("")
    problem = page.get_by_test_id("save-problem")
    expect(problem).to_have_text("The name is not saved: a workflow needs a name.")
    page.locator('textarea[name="system_prompt"]').fill("Be kind.")
    wait_saved(page)
    saved = api_get(page, f"/api/workflows/{workflow['id']}/")
    assert saved["name"] == "Bot" and saved["graph"]["nodes"][1]["data"]["system_prompt"] == "Be kind."
    page.get_by_label("Workflow name").fill("Kind bot")
    expect(problem).to_have_count(0)
    wait_saved(page)
    assert api_get(page, f"/api/workflows/{workflow['id']}/")["name"] == "Kind bot"
    assert page.js_errors == []


def boxes_overlap(a: dict, b: dict) -> bool:
    return a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"] and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"]


def test_a_run_error_stays_on_its_node_and_clears_when_the_node_is_edited(page, provider, fake_llm):
    graph = chat_graph(provider["id"], memory={"type": "memory.buffer"})
    open_workflow(page, graph)
    fake_llm.responder = lambda request: Reply(status=400, text="the model refused: " + "a very long explanation " * 80)
    page.get_by_role("tab", name="Test chat").click()
    page.get_by_role("textbox", name="Message", exact=True).fill("hi")
    page.get_by_role("button", name="Send", exact=True).click()
    agent = page.get_by_test_id("node-agent")
    expect(agent).to_have_attribute("data-run-status", "failed", timeout=60_000)
    error = agent.get_by_test_id("node-run-error")
    expect(error).to_contain_text("the model refused")
    assert "a very long explanation" in error.get_attribute("title")  # the whole text, one hover away
    assert not boxes_overlap(agent.bounding_box(), page.get_by_test_id("node-mem").bounding_box())
    assert error.bounding_box()["height"] < 24  # one line

    select_node(page, "agent")
    page.locator('textarea[name="system_prompt"]').fill("A new prompt.")
    expect(error).to_have_count(0)
    expect(agent).to_have_attribute("data-run-status", "")
    assert page.js_errors == []


def test_the_test_chat_survives_a_reload_even_mid_turn(page, provider, fake_llm):
    open_workflow(page, chat_graph(provider["id"]))
    chat = page.get_by_test_id("test-chat")

    def say(text):
        page.get_by_role("tab", name="Test chat").click()
        chat.get_by_role("textbox", name="Message").fill(text)
        chat.get_by_role("textbox", name="Message").press("Enter")

    say("first")
    expect(chat.get_by_test_id("chat-assistant")).to_have_text(re.compile("echo: first"), timeout=60_000)
    page.reload()
    page.get_by_role("tab", name="Test chat").click()
    expect(chat.locator(".msg")).to_have_count(2)
    expect(chat.get_by_test_id("chat-user")).to_have_text(re.compile("first"))

    held = threading.Event()
    fake_llm.responder = lambda request: (held.wait(60), Reply(text=f"echo: {request.last_user}"))[1]
    say("second")
    expect(chat.get_by_test_id("chat-user")).to_have_count(2)
    wait_for(lambda: any(r.last_user == "second" for r in fake_llm.requests), timeout=30, what="the model call")
    page.reload()  # mid-turn: the reply is still being made
    page.get_by_role("tab", name="Test chat").click()
    expect(chat.get_by_test_id("chat-user")).to_have_count(2)
    held.set()
    expect(chat.get_by_test_id("chat-assistant").nth(1)).to_have_text(re.compile("echo: second"), timeout=60_000)
    expect(chat.locator(".msg")).to_have_count(4)
    # the conversation goes on in the same thread
    fake_llm.responder = lambda request: Reply(text=f"echo: {request.last_user}")
    say("third")
    expect(chat.get_by_test_id("chat-assistant").nth(2)).to_have_text(re.compile("echo: third"), timeout=60_000)
    assert [r.last_user for r in fake_llm.requests][-1] == "third" and len(fake_llm.requests[-1].messages) >= 2
    assert page.js_errors == []


def test_the_test_chat_says_when_a_message_is_too_long_and_marks_a_cut_reply(page, provider, fake_llm):
    open_workflow(page, chat_graph(provider["id"]))
    page.get_by_role("tab", name="Test chat").click()
    chat = page.get_by_test_id("test-chat")
    box = chat.get_by_role("textbox", name="Message")
    box.fill("x" * 100_001)
    expect(chat.get_by_role("alert")).to_have_text("100,001 characters: the limit is 100,000. Shorten the message to send it.")
    expect(chat.get_by_role("button", name="Send", exact=True)).to_be_disabled()
    assert len(box.input_value()) == 100_001  # nothing cut

    fake_llm.responder = lambda request: Reply(text="The three reasons are: first", finish_reason="length")
    box.fill("Why?")
    expect(chat.get_by_role("alert")).to_be_hidden()
    box.press("Enter")
    reply = chat.get_by_test_id("chat-assistant")
    expect(reply).to_contain_text("The three reasons are: first", timeout=60_000)
    expect(reply).to_contain_text("Cut short: the reply reached its length limit.")
    # and in the trace: the model's step and the output's
    page.get_by_role("link", name="View trace →").click()
    for step in ("agent", "out"):
        expect(page.get_by_test_id(f"step-{step}").locator(".chip", has_text="cut")).to_contain_text("at max tokens")
    expect(page.get_by_test_id("step-chat").locator(".chip", has_text="cut")).to_have_count(0)
    assert page.js_errors == []


def test_the_share_panel_says_when_no_scheduler_runs(page, provider):
    """This server (the test's, not `make run`'s) fires no schedules: the panel says so, and what to do."""
    from django.core.cache import cache

    from triggers import beat

    cache.delete(beat.HEARTBEAT_KEY)
    graph = chat_graph(provider["id"])
    graph["nodes"].append({"id": "tick", "type": "trigger.schedule", "position": {"x": 0, "y": 200}, "data": {"interval_seconds": 60}})
    graph["edges"].append({"id": "e_tick", "source": "tick", "sourceHandle": "output", "target": "agent", "targetHandle": "input"})
    open_workflow(page, graph)
    page.get_by_role("button", name="Publish", exact=True).click()
    card = page.get_by_role("dialog", name="Share & triggers").get_by_test_id("trigger-tick")
    expect(card.get_by_test_id("scheduler-warning")).to_have_text(
        "⚠ schedules are not running: start Skein with make run (its server fires them)"
    )
    expect(card.get_by_test_id("scheduler-warning").locator("code")).to_have_text("make run")
    assert page.js_errors == []
