"""The editor, the widget and the triggers together: the editor's test chat is the widget's own chat
view streaming the draft (nodes light up as the events arrive), and publishing shows what a new user
needs to share the workflow (the embed snippet with its key, the webhook URL with a curl example)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import api_get, api_post, log_in
from tests.fakellm import Reply
from tests.graphs import chat_graph, edge, node

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in_as_owner(page):
    """The ``provider`` fixture belongs to ``user`` (alice)."""
    log_in(page, "alice", "alice-password")


def test_the_test_chat_is_the_widget_streaming_the_draft(page, user, provider, fake_llm):
    log_in_as_owner(page)
    workflow = api_post(page, "/api/workflows/", {"name": "Support bot", "graph": chat_graph(provider.pk)})
    page.goto(f"/workflows/{workflow['id']}")
    expect(page.locator(".react-flow__node")).to_have_count(3)

    page.get_by_role("tab", name="Test chat").click()
    chat = page.get_by_test_id("test-chat")
    # The widget's chat view (its own shadow root), titled after the workflow.
    expect(chat.get_by_role("heading", name="Support bot")).to_be_visible()
    chat.get_by_role("textbox", name="Message").fill("hello there")
    with page.expect_request(re.compile(r"/api/workflows/\d+/chat/stream/$")) as sent:
        chat.get_by_role("button", name="Send", exact=True).click()
    headers = sent.value.headers
    assert headers["accept"] == "text/event-stream, application/json"
    assert headers["x-csrftoken"] == next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")

    expect(chat.get_by_test_id("chat-assistant")).to_contain_text("echo: hello there", timeout=60_000)
    expect(chat.get_by_test_id("chat-user")).to_contain_text("hello there")
    for node_id in ("chat", "agent", "out"):
        expect(page.get_by_test_id(f"node-{node_id}")).to_have_attribute("data-run-status", "succeeded")

    # Below the chat: the turn's trace and the thread's memory.
    turn = page.get_by_test_id("test-turn")
    expect(turn).to_contain_text("succeeded")
    runs = api_get(page, f"/api/runs/?workflow={workflow['id']}")["results"]
    assert len(runs) == 1 and runs[0]["trigger"] == "chat"
    expect(turn.get_by_role("link", name="View trace →")).to_have_attribute("href", f"/runs/{runs[0]['id']}")
    expect(turn.get_by_role("link", name=re.compile("memory"))).to_have_attribute("href", f"/threads/{runs[0]['thread']}/memory")

    # The next message continues the thread: the model sees the first turn.
    chat.get_by_role("textbox", name="Message").fill("and again")
    chat.get_by_role("textbox", name="Message").press("Enter")
    expect(chat.get_by_test_id("chat-assistant")).to_have_count(2)
    expect(chat.get_by_test_id("chat-assistant").nth(1)).to_contain_text("echo: and again", timeout=60_000)
    assert len(api_get(page, f"/api/threads/{runs[0]['thread']}/messages/")) == 4

    # A failing node turns red with its error; the chat says the turn failed.
    fake_llm.responder = lambda request: Reply(status=500, text="model exploded")
    chat.get_by_role("textbox", name="Message").fill("break please")
    chat.get_by_role("textbox", name="Message").press("Enter")
    expect(page.get_by_test_id("node-agent")).to_have_attribute("data-run-status", "failed", timeout=60_000)
    expect(chat.get_by_test_id("chat-error")).to_be_visible()
    expect(turn).to_contain_text("failed")
    assert page.js_errors == []


def webhook_graph(provider_id: int) -> dict:
    graph = chat_graph(provider_id)
    graph["nodes"].append(node("hook", "trigger.webhook", 0, 200, require_signature=True))
    graph["edges"].append(edge("hook", "agent"))
    return graph


def test_publish_shows_the_embed_snippet_and_the_webhook(page, user, provider, fake_llm):
    log_in_as_owner(page)
    workflow = api_post(page, "/api/workflows/", {"name": "Shop helper", "graph": webhook_graph(provider.pk)})
    page.goto(f"/workflows/{workflow['id']}")
    expect(page.locator(".react-flow__node")).to_have_count(4)

    page.get_by_role("button", name="Publish", exact=True).click()
    panel = page.get_by_role("dialog", name="Share & triggers")
    expect(panel).to_be_visible()
    expect(panel).to_contain_text("Live: version")

    settings = api_get(page, f"/api/workflows/{workflow['id']}/widget/")
    snippet = panel.get_by_test_id("embed-snippet")
    expect(snippet).to_have_text(settings["embed_snippet"])
    expect(snippet).to_contain_text(settings["public_key"])

    # The webhook: its URL, a curl example, the signing secret hidden until revealed.
    trigger = next(t for t in api_get(page, f"/api/workflows/{workflow['id']}/")["triggers"] if t["type"] == "trigger.webhook")
    card = panel.get_by_test_id("trigger-hook")
    expect(card.get_by_test_id("webhook-url")).to_have_value(trigger["webhook_url"])
    expect(card.locator("pre")).to_contain_text(f"curl -X POST '{trigger['webhook_url']}?wait=1'")
    secret = card.get_by_test_id("signing-secret")
    expect(secret).not_to_contain_text(trigger["signing_secret"])
    card.get_by_role("button", name="Reveal").click()
    expect(secret).to_have_text(trigger["signing_secret"])

    # Regenerate: a new URL, the old one gone.
    page.once("dialog", lambda d: d.accept())
    card.get_by_role("button", name="Regenerate URL").click()
    expect(card.get_by_test_id("webhook-url")).not_to_have_value(trigger["webhook_url"])
    fresh = next(t for t in api_get(page, f"/api/workflows/{workflow['id']}/")["triggers"] if t["type"] == "trigger.webhook")
    expect(card.get_by_test_id("webhook-url")).to_have_value(fresh["webhook_url"])

    # Widget settings: allowed origins and the look, saved through PATCH.
    panel.get_by_label("Allowed sites").fill("https://shop.example.com")
    panel.get_by_label("Title").fill("Shop helper")
    panel.get_by_label("Starter questions").fill("Opening hours?\nPrices?")
    panel.get_by_role("button", name="Save widget settings").click()
    expect(page.locator(".toast", has_text="Widget settings saved")).to_be_visible()
    saved = api_get(page, f"/api/workflows/{workflow['id']}/widget/")
    assert saved["allowed_origins"] == ["https://shop.example.com"]
    assert saved["theme"]["title"] == "Shop helper" and saved["theme"]["starters"] == ["Opening hours?", "Prices?"]

    # Closed, and opened again from the toolbar.
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    page.get_by_role("button", name="Share / Triggers").click()
    expect(page.get_by_role("dialog", name="Share & triggers").get_by_test_id("public-key")).to_have_text(saved["public_key"])
    assert page.js_errors == []


def test_providers_test_connection(page, user, provider, fake_llm):
    log_in_as_owner(page)
    page.goto("/providers")
    row = page.get_by_role("row", name=re.compile("fake"))
    row.get_by_role("button", name="Test connection").click()
    result = page.get_by_test_id("connection-result")
    # No model named: the server's first listed model answers.
    expect(result).to_contain_text("Connected", timeout=30_000)
    expect(result).to_contain_text("fake")
    page.get_by_label("Model to test").fill("fake-model")
    page.get_by_role("button", name="Test again").click()
    expect(result).to_contain_text("Connected", timeout=30_000)
    expect(result).to_contain_text("fake-model")

    fake_llm.responder = lambda request: Reply(status=401, text="bad key")
    page.get_by_role("button", name="Test again").click()
    expect(result).to_contain_text("Failed", timeout=30_000)
    assert page.js_errors == []
