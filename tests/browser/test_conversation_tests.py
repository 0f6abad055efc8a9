"""Conversation tests in the browser (issue 17): save a real thread as a test from its memory
inspector, add checks in the Tests tab, run it with live progress, read the failure (with exactly
what the model was sent), and compare two versions side by side.

Daphne serves the app in the embedded mode on the test database, so the Tests tab's socket
(ws/test-runs/{id}/) is real: test runs execute in daphne's process and push their progress."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.helpers import log_in
from tests.graphs import chat_graph
from tests.stack import full_mode_env, start_daphne

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def daphne(django_db_setup, django_db_blocker, tmp_path_factory):
    from django.db import connection

    with django_db_blocker.unblock():
        name = connection.settings_dict["NAME"]
    web, base = start_daphne(full_mode_env(name, ""), tmp_path_factory.mktemp("daphne"))
    try:
        yield base
    finally:
        web.stop()


@pytest.fixture
def owner(daphne, user, provider):
    """Alice (owner of the fake provider), with a chatbot that remembers, and an API client."""
    from rest_framework.authtoken.models import Token

    http = httpx.Client(base_url=daphne, headers={"Authorization": f"Token {Token.objects.create(user=user).key}"}, timeout=60)
    workflow = http.post(
        "/api/workflows/", json={"name": "Order bot", "graph": chat_graph(provider.pk, memory={"type": "memory.buffer"})}
    ).json()
    assert workflow["errors"] == []
    yield http, workflow
    http.close()


@pytest.fixture
def browser_page(chromium, daphne):
    context = chromium.new_context(viewport={"width": 1280, "height": 860}, base_url=daphne)
    context.set_default_timeout(20_000)
    page = context.new_page()
    page.js_errors = []
    page.on("pageerror", lambda exc: page.js_errors.append(str(exc)))
    yield page
    context.close()


def test_save_a_thread_as_a_test_run_it_and_read_the_failure(browser_page, owner, fake_llm):
    page = browser_page
    http, workflow = owner
    first = http.post(f"/api/workflows/{workflow['id']}/chat/", json={"message": "my order is 42"}).json()
    http.post(f"/api/workflows/{workflow['id']}/chat/", json={"message": "where is my order?", "thread": first["thread"]})

    log_in(page, "alice", "alice-password")
    page.goto(f"/threads/{first['thread']}/memory")
    page.get_by_role("button", name="Save as test").click()

    # The editor opens on the Tests tab with the new test: the thread's messages, the replies as references.
    page.wait_for_url(re.compile(rf"/workflows/{workflow['id']}\?tab=tests&test=\d+"))
    editor = page.get_by_test_id("test-editor")
    expect(editor).to_be_visible()
    expect(editor.get_by_label("Message of turn 1")).to_have_value("my order is 42")
    expect(editor.get_by_label("Message of turn 2")).to_have_value("where is my order?")
    expect(editor.get_by_test_id("turn-1")).to_contain_text("echo: where is my order?")
    editor.get_by_label("Test name").fill("remembers the order")

    # Turn 1: expect the reply given then. Turn 2: the model must have been sent something it is not.
    editor.get_by_test_id("turn-0").get_by_role("button", name="Expect this reply").click()
    expect(editor.get_by_label("Turn 1, check 1: text")).to_have_value("echo: my order is 42")
    editor.get_by_test_id("turn-1").get_by_role("button", name="+ Check").click()
    editor.get_by_label("Turn 2, check 1: kind").select_option("sent_contains")
    expect(editor.get_by_label("Turn 2, check 1: node")).to_have_value("agent")  # offered from this workflow
    editor.get_by_label("Turn 2, check 1: text").fill("order number 43")
    editor.get_by_role("button", name="Save test").click()
    expect(editor).to_be_hidden()
    tests = http.get(f"/api/workflows/{workflow['id']}/tests/").json()
    assert [t["name"] for t in tests] == ["remembers the order"]
    assert tests[0]["turns"][1]["expect"] == [{"sent_contains": {"node": "agent", "text": "order number 43"}}]

    # Run it: progress shows while it runs, then the failure.
    tab = page.get_by_test_id("tests-tab")
    tab.get_by_role("button", name="▶ Run all").click()
    progress = page.get_by_test_id("test-progress")
    expect(progress).to_have_attribute("data-live", "true")  # its socket is open (progress is pushed, not polled)
    expect(progress).to_have_attribute("data-status", "failed", timeout=60_000)
    expect(progress).to_contain_text("0 passed · 1 failed")
    expect(tab.get_by_test_id(f"test-{tests[0]['id']}").locator(".badge-failed")).to_be_visible()

    # The results: the failed check says why and shows exactly what the model was sent.
    progress.get_by_role("link", name="Results →").click()
    page.wait_for_url(re.compile(r"/test-runs/\d+$"))
    result = page.get_by_test_id("result-remembers the order")
    expect(result.locator(".badge-failed")).to_be_visible()
    checks = result.get_by_test_id("check-result")
    expect(checks.nth(0)).to_have_attribute("data-status", "passed")
    failed = checks.nth(1)
    expect(failed).to_have_attribute("data-status", "failed")
    expect(failed).to_contain_text("agent was sent “order number 43”")  # what the check expects
    expect(failed).to_contain_text("node 'agent' was not sent 'order number 43'")  # and why it failed
    sent = failed.get_by_test_id("sent-messages")
    expect(sent).to_contain_text("You are a test bot.")
    expect(sent).to_contain_text("my order is 42")
    expect(sent.locator("tr")).to_have_count(4)  # the system prompt, the first turn and its reply, the new message
    assert not page.js_errors, page.js_errors


def test_compare_the_draft_with_the_published_version(browser_page, owner, provider, fake_llm):
    page = browser_page
    http, workflow = owner
    assert http.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 201
    http.patch(
        f"/api/workflows/{workflow['id']}/",
        json={"revision": workflow["revision"], "graph": chat_graph(provider.pk, system_prompt="Be terse.")},
    )
    http.post(
        f"/api/workflows/{workflow['id']}/tests/",
        json={
            "name": "keeps its prompt",
            "turns": [
                {"message": "hi", "expect": [{"sent_contains": {"node": "agent", "text": "You are a test bot."}}]},
            ],
        },
    )

    log_in(page, "alice", "alice-password")
    page.goto(f"/workflows/{workflow['id']}?tab=tests")
    tab = page.get_by_test_id("tests-tab")
    for version, status in (("1", "passed"), ("draft", "failed")):
        tab.get_by_label("Version to test").select_option(version)
        tab.get_by_role("button", name="▶ Run all").click()
        expect(page.get_by_test_id("test-progress")).to_have_attribute("data-status", status, timeout=60_000)
    runs = http.get(f"/api/workflows/{workflow['id']}/test-runs/").json()["results"]
    for run in runs:
        tab.get_by_label(f"Pick run {run['id']} to compare").check()
    tab.get_by_role("button", name="Compare").click()
    page.wait_for_url(re.compile(r"/test-runs/\d+/compare/\d+$"))
    expect(page.get_by_test_id("compare-summary")).to_contain_text("1 test changed verdict")
    row = page.get_by_test_id("compare-keeps its prompt")
    expect(row).to_contain_text("verdict changed")
    expect(row.locator(".ct-reply-changed")).to_have_count(0)  # the fake model echoes: same replies
    assert not page.js_errors, page.js_errors
