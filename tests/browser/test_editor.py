"""The editor end to end (issue 5, item 7): build a summarizing chatbot by drag and drop, see a
validation error and fix it, find it saved after a reload, chat with it and watch the nodes light
up, then export it and import it back."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import api_get, api_post, connect, drop_from_palette, log_in, select_node

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def wait_saved(page):
    expect(page.get_by_test_id("save-status")).to_have_attribute("data-status", "saved")


def expect_node_error(page, node_id: str, text: str | None) -> None:
    """After the autosave, the node shows the server's error containing `text` (None: no error)."""
    wait_saved(page)
    node = page.get_by_test_id(f"node-{node_id}")
    expect(node).to_have_attribute("data-invalid", "false" if text is None else "true")
    if text is not None:
        expect(node.get_by_test_id("node-error")).to_contain_text(text)


def test_build_test_and_transfer_a_summarizing_chatbot(page, browser_user, fake_llm, tmp_path):
    log_in(page)
    provider = api_post(
        page,
        "/api/providers/",
        {"name": "fake", "kind": "openai_compatible", "api_base": fake_llm.base_url, "api_key": "test"},
    )

    # A blank workflow: the empty canvas says what to do.
    page.get_by_role("button", name="New workflow").click()
    page.wait_for_url(re.compile(r"/workflows/\d+$"))
    workflow_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
    expect(page.get_by_text("Drag a node here to start")).to_be_visible()

    # Drag four nodes from the palette (zoomed out so they fit side by side).
    page.locator(".react-flow__controls-zoomout").click()
    page.locator(".react-flow__controls-zoomout").click()
    drop_from_palette(page, "trigger.chat", 110, 140)
    drop_from_palette(page, "llm", 340, 140)
    drop_from_palette(page, "output", 570, 140)
    drop_from_palette(page, "memory.summary", 340, 430)
    for node_id in ("chat_1", "llm_1", "output_1", "summary_1"):
        expect(page.get_by_test_id(f"node-{node_id}")).to_be_visible()

    # Connect them; a flow output dropped on a memory port is refused while dragging.
    connect(page, "chat_1", "output", "llm_1", "memory")
    expect(page.locator(".react-flow__edge")).to_have_count(0)
    connect(page, "chat_1", "output", "llm_1", "input")
    connect(page, "llm_1", "output", "output_1", "input")
    connect(page, "summary_1", "memory", "llm_1", "memory")
    expect(page.locator(".react-flow__edge")).to_have_count(3)
    expect(page.locator(".react-flow__edge.sk-edge-memory")).to_have_count(1)

    # Params: the LLM uses the fake provider.
    select_node(page, "llm_1")
    page.locator('select[name="provider"]').select_option(str(provider["id"]))
    # choosing a provider picks a model it serves; another one can still be typed in
    expect(page.locator('select[name="model"]')).to_have_value("fake")
    page.locator('select[name="model"]').select_option(label="Other model (type its name)…")
    page.locator('input[name="model"]').fill("fake-model")
    page.locator('textarea[name="system_prompt"]').fill("You are a test bot.")
    wait_saved(page)
    expect(page.get_by_test_id("node-llm_1")).to_have_attribute("data-invalid", "false")

    # An out-of-range value is flagged at the field at once, and by the server on the node; fixing it clears both.
    page.locator('input[name="temperature"]').fill("5")
    expect(page.locator('[data-field="temperature"] .field-error')).to_have_text("Must be at most 2")
    expect_node_error(page, "llm_1", "less than or equal to 2")
    page.locator('input[name="temperature"]').fill("0.2")
    expect_node_error(page, "llm_1", None)

    # A graph error: an external summarizer needs a model on the llm port.
    select_node(page, "summary_1")
    page.locator('select[name="llm_source"]').select_option("external")
    expect_node_error(page, "summary_1", "attach an llm.model node")
    expect(page.get_by_test_id("problems-pill")).to_contain_text("1 problem")
    page.locator('select[name="llm_source"]').select_option("from_parent")
    page.locator('input[name="keep_last"]').fill("4")
    expect_node_error(page, "summary_1", None)
    expect(page.get_by_test_id("problems-pill")).to_have_count(0)

    # Reload: everything is still there, on the server and in the editor.
    saved = api_get(page, f"/api/workflows/{workflow_id}/")
    assert saved["errors"] == []
    assert {n["id"]: n["type"] for n in saved["graph"]["nodes"]} == {
        "chat_1": "trigger.chat",
        "llm_1": "llm",
        "output_1": "output",
        "summary_1": "memory.summary",
    }
    page.reload()
    expect(page.locator(".react-flow__node")).to_have_count(4)
    expect(page.locator(".react-flow__edge")).to_have_count(3)
    select_node(page, "llm_1")
    expect(page.locator('input[name="model"]')).to_have_value("fake-model")
    expect(page.locator('select[name="provider"]')).to_have_value(str(provider["id"]))
    expect(page.locator('input[name="temperature"]')).to_have_value("0.2")
    select_node(page, "summary_1")
    expect(page.locator('input[name="keep_last"]')).to_have_value("4")

    # Chat in the test panel: the reply appears and the nodes that ran turn green.
    page.get_by_role("tab", name="Test chat").click()
    page.get_by_role("textbox", name="Message", exact=True).fill("hello there")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.get_by_test_id("chat-assistant")).to_contain_text("echo: hello there", timeout=60_000)
    for node_id in ("chat_1", "llm_1", "output_1"):
        expect(page.get_by_test_id(f"node-{node_id}")).to_have_attribute("data-run-status", "succeeded")
    expect(page.get_by_role("link", name="View trace →")).to_be_visible()
    sent = [r for r in fake_llm.requests if r.last_user == "hello there"]
    assert sent and sent[-1].messages[0] == {"role": "system", "content": "You are a test bot."}

    # Export, then import the file back as a new workflow.
    with page.expect_download() as download_info:
        page.get_by_role("button", name="Export").click()
    exported_path = tmp_path / "exported.json"
    download_info.value.save_as(exported_path)
    exported = json.loads(exported_path.read_text())
    assert exported["name"] == saved["name"]
    assert len(exported["graph"]["nodes"]) == 4 and len(exported["graph"]["edges"]) == 3

    page.get_by_role("link", name="Workflows").first.click()
    page.get_by_role("heading", name="Workflows", exact=True).wait_for()
    page.get_by_test_id("import-input").set_input_files(str(exported_path))
    page.wait_for_url(re.compile(r"/workflows/\d+$"))
    imported_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
    assert imported_id != workflow_id
    expect(page.locator(".react-flow__node")).to_have_count(4)
    expect(page.locator(".react-flow__edge")).to_have_count(3)
    imported = api_get(page, f"/api/workflows/{imported_id}/")
    # the file names the provider by name and kind; importing maps it back to the same provider
    assert imported["graph"]["nodes"] == api_get(page, f"/api/workflows/{workflow_id}/")["graph"]["nodes"]
    assert all(isinstance(n["data"].get("provider", {}), dict) for n in exported["graph"]["nodes"])
    assert imported["errors"] == []

    assert page.js_errors == []
