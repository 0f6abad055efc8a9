"""Memory made visible in the browser: a run's "sent to the model" view and its summarizations, the
memory inspector's summary edit, and the "summarizing earlier messages…" cue of the test chat
while the memory and its summarizer light up on the canvas."""

from __future__ import annotations

import threading

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import api_get, api_post, log_in
from tests.fakellm import Reply
from tests.graphs import chat_graph

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def summarizing_graph(provider_id: int) -> dict:
    return chat_graph(
        provider_id,
        memory={"type": "memory.summary", "max_messages": 4, "keep_last": 2, "llm_source": "external"},
        summarizer={"model": "cheap-model", "provider": provider_id},
    )


def summarizer(request) -> Reply:
    if request.model == "cheap-model":
        return Reply(text="Ada likes tea.", prompt_tokens=40, completion_tokens=5)
    return Reply(text=f"echo: {request.last_user}")


def test_the_trace_shows_what_each_model_was_sent_and_each_summarization(page, user, provider, fake_llm):
    fake_llm.responder = summarizer
    log_in(page, "alice", "alice-password")
    workflow = api_post(page, "/api/workflows/", {"name": "Tea bot", "graph": summarizing_graph(provider.pk)})
    thread = None
    for message in ("I am Ada", "I like tea", "What do I like?"):
        turn = api_post(page, f"/api/workflows/{workflow['id']}/chat/", {"message": message, **({"thread": thread} if thread else {})})
        thread = turn["thread"]
    [summarized] = fake_llm.requests_for("cheap-model")
    agent_sent = fake_llm.requests_for("agent-model")[-1].messages

    page.goto(f"/runs/{turn['run']}")
    expect(page.get_by_role("heading", name="Run #")).to_contain_text("succeeded")
    # The summarization is its own entry, with its model and tokens, and what it was sent.
    entry = page.get_by_test_id("summarization-mem")
    expect(entry).to_contain_text("cheap-model")
    expect(entry).to_contain_text("summary of messages 1–2 (2)")
    expect(entry).to_contain_text("40")
    entry.locator(".step-head").click()
    sent_to_summarizer = entry.get_by_test_id("sent-messages")
    expect(sent_to_summarizer).to_contain_text("Sent to the summarizer")
    expect(sent_to_summarizer.locator(".sent-msg")).to_have_count(len(summarized.messages))
    expect(sent_to_summarizer.locator(".sent-msg").nth(1)).to_contain_text("- I am Ada")  # the participant's own messages, one per line
    # The run's totals include the summarizer's tokens.
    run = api_get(page, f"/api/runs/{turn['run']}/")
    assert run["prompt_tokens"] == sum(s["prompt_tokens"] for s in run["summarizations"]) + 11
    expect(page.locator(".stat-row")).to_contain_text(str(run["prompt_tokens"]))

    # The LLM step: exactly the messages the provider received, summary included, in order.
    step = page.get_by_test_id("step-agent")
    step.locator(".step-head").click()
    sent = step.get_by_test_id("sent-messages")
    expect(sent).to_contain_text("Sent to the model")
    rows = sent.locator(".sent-msg")
    expect(rows).to_have_count(len(agent_sent))
    for index, message in enumerate(agent_sent):
        expect(rows.nth(index).locator(".role")).to_have_text(message["role"])
        expect(rows.nth(index).locator("pre")).to_have_text(message["content"])
    expect(rows.nth(1)).to_contain_text("Ada likes tea.")
    assert page.js_errors == []


def test_the_memory_inspector_edits_a_summary(page, user, provider, fake_llm):
    fake_llm.responder = summarizer
    log_in(page, "alice", "alice-password")
    workflow = api_post(page, "/api/workflows/", {"name": "Tea bot", "graph": summarizing_graph(provider.pk)})
    thread = None
    for message in ("I am Ada", "I like tea", "What do I like?"):
        thread = api_post(page, f"/api/workflows/{workflow['id']}/chat/", {"message": message, **({"thread": thread} if thread else {})})[
            "thread"
        ]

    page.goto(f"/threads/{thread}/memory")
    box = page.get_by_test_id("summary-mem")
    expect(box).to_contain_text("Ada likes tea.")
    box.get_by_role("button", name="Edit summary").click()
    box.get_by_label("Summary of mem").fill("Ada likes green tea and lives in Lisbon.")
    box.get_by_role("button", name="Save summary").click()
    expect(box).to_contain_text("Ada likes green tea and lives in Lisbon.")
    expect(page.get_by_test_id("memory-mem").locator(".memory-table tr").first).to_contain_text("Ada likes green tea")
    [memory] = api_get(page, f"/api/threads/{thread}/memory/")
    assert memory["summary"] == "Ada likes green tea and lives in Lisbon."
    assert page.js_errors == []


def test_the_test_chat_says_it_is_summarizing_while_the_memory_lights_up(live_page, user, provider, fake_llm):
    page = live_page
    release = threading.Event()

    def slow_summarizer(request):
        if request.model == "cheap-model":
            release.wait(30)  # until the test has seen the cue
        return summarizer(request)

    fake_llm.responder = slow_summarizer
    log_in(page, "alice", "alice-password")
    workflow = api_post(page, "/api/workflows/", {"name": "Tea bot", "graph": summarizing_graph(provider.pk)})
    page.goto(f"/workflows/{workflow['id']}")
    page.get_by_role("tab", name="Test chat").click()
    chat = page.get_by_test_id("test-chat")
    box = chat.get_by_role("textbox", name="Message")
    for index, message in enumerate(("I am Ada", "I like tea")):
        box.fill(message)
        box.press("Enter")
        answer = chat.get_by_test_id("chat-assistant").nth(index)
        expect(answer).to_contain_text(f"echo: {message}", timeout=30_000)
        expect(answer).to_have_attribute("aria-busy", "false")  # the turn is over: the chat takes the next message
    reply = chat.get_by_test_id("chat-assistant").nth(2)
    try:
        box.fill("What do I like?")
        box.press("Enter")
        expect(reply).to_have_text("Tea bot: Summarizing earlier messages…", timeout=30_000)
        expect(page.get_by_test_id("node-mem")).to_have_attribute("data-run-status", "running")
        expect(page.get_by_test_id("node-summarizer")).to_have_attribute("data-run-status", "running")
    finally:
        release.set()
    expect(reply).to_contain_text("echo: What do I like?", timeout=30_000)
    expect(reply).not_to_contain_text("Summarizing")
    assert page.js_errors == []
