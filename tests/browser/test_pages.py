"""Editing safety (shortcuts, undo, a conflicting save) and the pages around the editor: run
history, a run's trace, and the memory inspector with edit-and-replace."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import PASSWORD, USERNAME, api_call, api_get, api_post, log_in, select_node

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def chatbot_graph(provider_id: int | None = None, memory: str = "memory.summary") -> dict:
    llm = {"model": "fake-model", "provider": provider_id} if provider_id else {}
    return {
        "nodes": [
            {"id": "chat_1", "type": "trigger.chat", "position": {"x": 0, "y": 0}, "data": {}},
            {"id": "llm_1", "type": "llm", "position": {"x": 300, "y": 0}, "data": llm},
            {"id": "mem_1", "type": memory, "position": {"x": 300, "y": 250}, "data": {}},
            {"id": "output_1", "type": "output", "position": {"x": 600, "y": 0}, "data": {}},
        ],
        "edges": [
            {"id": "e1", "source": "chat_1", "sourceHandle": "output", "target": "llm_1", "targetHandle": "input"},
            {"id": "e2", "source": "mem_1", "sourceHandle": "memory", "target": "llm_1", "targetHandle": "memory"},
            {"id": "e3", "source": "llm_1", "sourceHandle": "output", "target": "output_1", "targetHandle": "input"},
        ],
    }


def saved_node_ids(page, workflow_id: int) -> list[str]:
    return sorted(n["id"] for n in api_get(page, f"/api/workflows/{workflow_id}/")["graph"]["nodes"])


def test_shortcuts_undo_and_a_conflicting_save(page, browser_user):
    log_in(page)
    workflow = api_post(page, "/api/workflows/", {"name": "Shortcuts", "graph": chatbot_graph()})
    page.goto(f"/workflows/{workflow['id']}")
    nodes = page.locator(".react-flow__node")
    expect(nodes).to_have_count(4)
    status = page.get_by_test_id("save-status")

    # Copy and paste a node, undo and redo the paste, then delete the copy.
    select_node(page, "llm_1")
    page.keyboard.press("Control+c")
    page.keyboard.press("Control+v")
    expect(nodes).to_have_count(5)
    expect(page.get_by_test_id("node-llm_2")).to_be_visible()
    page.keyboard.press("Control+z")
    expect(nodes).to_have_count(4)
    page.keyboard.press("Control+Shift+z")
    expect(nodes).to_have_count(5)
    expect(status).to_have_attribute("data-status", "saved")
    assert saved_node_ids(page, workflow["id"]) == ["chat_1", "llm_1", "llm_2", "mem_1", "output_1"]
    page.keyboard.press("Delete")
    expect(nodes).to_have_count(4)
    expect(status).to_have_attribute("data-status", "saved")
    assert saved_node_ids(page, workflow["id"]) == ["chat_1", "llm_1", "mem_1", "output_1"]

    # Someone else saves meanwhile: our next save is refused and says so; nothing is overwritten.
    current = api_get(page, f"/api/workflows/{workflow['id']}/")
    api_call(page, "PATCH", f"/api/workflows/{workflow['id']}/", {"name": "Renamed elsewhere", "revision": current["revision"]})
    select_node(page, "llm_1")
    page.locator('input[name="model"]').fill("another-model")
    expect(page.get_by_test_id("conflict-banner")).to_be_visible()
    expect(status).to_have_attribute("data-status", "conflict")
    after = api_get(page, f"/api/workflows/{workflow['id']}/")
    assert after["name"] == "Renamed elsewhere"
    assert next(n for n in after["graph"]["nodes"] if n["id"] == "llm_1")["data"] == {}

    page.get_by_role("button", name="Reload latest").click()
    expect(page.get_by_test_id("conflict-banner")).to_have_count(0)
    expect(page.get_by_label("Workflow name")).to_have_value("Renamed elsewhere")
    expect(status).to_have_attribute("data-status", "saved")


def test_run_history_trace_and_memory_inspector(page, browser_user, fake_llm):
    log_in(page)
    provider = api_post(
        page, "/api/providers/", {"name": "fake", "kind": "openai_compatible", "api_base": fake_llm.base_url, "api_key": "test"}
    )
    workflow = api_post(page, "/api/workflows/", {"name": "Support", "graph": chatbot_graph(provider["id"], "memory.buffer")})
    first = api_post(page, f"/api/workflows/{workflow['id']}/chat/", {"message": "my name is Ada"})
    api_post(page, f"/api/workflows/{workflow['id']}/chat/", {"message": "what is my name?", "thread": first["thread"]})

    # Run history: both turns, newest first, with trigger and status.
    page.goto(f"/workflows/{workflow['id']}/runs")
    rows = page.locator(".runs-table tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("what is my name?")
    expect(rows.first).to_contain_text("chat")
    expect(rows.first).to_contain_text("succeeded")

    # The trace: each node's step, the model and tokens of the LLM step, its input and output.
    rows.first.click()
    expect(page.get_by_role("heading", name="Run #")).to_contain_text("succeeded")
    llm_step = page.get_by_test_id("step-llm_1")
    expect(llm_step).to_contain_text("fake-model")
    expect(llm_step).to_contain_text("prompt tokens")
    llm_step.locator(".step-head").click()
    expect(llm_step.locator(".step-body")).to_contain_text("echo: what is my name?")
    expect(page.locator(".steps > li")).to_have_count(3)

    # The memory inspector: the history the model sees next, edited and replaced.
    page.get_by_role("link", name="Thread memory").click()
    card = page.get_by_test_id("memory-mem_1")
    expect(card.locator(".memory-table tr")).to_have_count(4)
    card.get_by_role("button", name="Edit").click()
    card.get_by_role("button", name="Remove message 4").click()
    card.get_by_role("button", name="Remove message 3").click()
    card.get_by_label("Message 1", exact=True).fill("my name is Grace")
    card.get_by_role("button", name="Replace history").click()
    expect(card.locator(".memory-table tr")).to_have_count(2)
    expect(card).to_contain_text("my name is Grace")
    memory = api_get(page, f"/api/threads/{first['thread']}/memory/")
    history = next(h for h in memory if h["name"] == "mem_1")
    assert [m["content"] for m in history["messages"]] == ["my name is Grace", "echo: my name is Ada"]
    # The transcript is never trimmed by memory edits.
    expect(page.locator(".transcript-msg")).to_have_count(4)


def test_run_button_runs_the_manual_trigger(page, browser_user):
    log_in(page)
    graph = {
        "nodes": [
            {"id": "manual_1", "type": "trigger.manual", "position": {"x": 0, "y": 0}, "data": {"input": "ping"}},
            {"id": "template_1", "type": "template", "position": {"x": 300, "y": 0}, "data": {"template": "pong: {{ input }}"}},
            {"id": "output_1", "type": "output", "position": {"x": 600, "y": 0}, "data": {}},
        ],
        "edges": [
            {"id": "e1", "source": "manual_1", "sourceHandle": "output", "target": "template_1", "targetHandle": "input"},
            {"id": "e2", "source": "template_1", "sourceHandle": "output", "target": "output_1", "targetHandle": "input"},
        ],
    }
    workflow = api_post(page, "/api/workflows/", {"name": "Manual", "graph": graph})
    page.goto(f"/workflows/{workflow['id']}")
    page.get_by_role("button", name="▶ Run").click()
    expect(page.locator(".toast")).to_contain_text("Run finished: pong: ping")
    for node_id in ("manual_1", "template_1", "output_1"):
        expect(page.get_by_test_id(f"node-{node_id}")).to_have_attribute("data-run-status", "succeeded")
    runs = api_get(page, f"/api/runs/?workflow={workflow['id']}")
    assert runs["count"] == 1 and runs["results"][0]["trigger"] == "manual"


def test_workflow_list_templates_rename_duplicate_delete(page, browser_user):
    log_in(page)
    expect(page.get_by_text("No workflows yet")).to_be_visible()

    # A starter template opens in the editor, ready to test.
    page.locator(".template-card", has_text="Chatbot with summarizing memory").click()
    expect(page.locator(".react-flow__node")).to_have_count(4)
    expect(page.get_by_test_id("problems-pill")).to_have_count(0)
    page.get_by_role("link", name="Workflows").first.click()

    row = page.locator(".workflows-table tbody tr")
    expect(row).to_have_count(1)
    row.get_by_role("button", name="Rename").click()
    page.get_by_label("Workflow name").fill("Support bot")
    page.get_by_label("Workflow name").press("Enter")
    expect(row.first).to_contain_text("Support bot")

    row.first.get_by_role("button", name="Duplicate").click()
    expect(page.locator(".react-flow__node")).to_have_count(4)
    page.get_by_role("link", name="Workflows").first.click()
    expect(row).to_have_count(2)
    names = api_get(page, "/api/workflows/")
    assert sorted(w["name"] for w in names["results"]) == ["Support bot", "Support bot (copy)"]

    page.once("dialog", lambda dialog: dialog.accept())
    page.locator(".workflows-table tbody tr", has_text="(copy)").get_by_role("button", name="Delete").click()
    expect(row).to_have_count(1)
    assert [w["name"] for w in api_get(page, "/api/workflows/")["results"]] == ["Support bot"]


def test_change_password_on_the_account_page(page, browser_user):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=browser_user)
    log_in(page)
    page.get_by_role("link", name=USERNAME).click()
    expect(page.get_by_role("heading", name="Account")).to_be_visible()
    form = page.get_by_role("form", name="Change password")
    form.get_by_label("Current password").fill("not my password")
    form.get_by_label("New password", exact=True).fill("a-brand-new-passphrase")
    form.get_by_label("New password, again").fill("a-brand-new-passphrase")
    form.get_by_role("button", name="Change password").click()
    expect(form.get_by_role("alert")).to_contain_text("the current password is wrong")
    form.get_by_label("Current password").fill(PASSWORD)
    form.get_by_role("button", name="Change password").click()
    expect(page.get_by_text("Password changed.")).to_be_visible()
    assert not Token.objects.filter(key=token.key).exists()  # the account's API token was revoked
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_label("Username")).to_be_visible()  # logged out before logging in again
    log_in(page, USERNAME, "a-brand-new-passphrase")
