"""The editor's Versions menu, the Threads pages (rename, delete, linked from runs), the Share
panel's spend limits, and workflow files exported and imported through the UI."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import USERNAME, api_call, api_get, api_post, log_in
from tests.browser.test_pages import chatbot_graph

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def a_chatbot(page, fake_llm, name="Support"):
    provider = api_post(
        page, "/api/providers/", {"name": "fake", "kind": "openai_compatible", "api_base": fake_llm.base_url, "api_key": "test"}
    )
    return api_post(page, "/api/workflows/", {"name": name, "graph": chatbot_graph(provider["id"], "memory.buffer")})


def test_the_versions_menu_compares_and_restores_a_version(page, browser_user, fake_llm):
    log_in(page)
    workflow = a_chatbot(page, fake_llm)
    api_post(page, f"/api/workflows/{workflow['id']}/publish/", {})
    changed = json.loads(json.dumps(workflow["graph"]))
    changed["nodes"][1]["data"]["system_prompt"] = "Answer in French."
    api_call(page, "PUT", f"/api/workflows/{workflow['id']}/", {"graph": changed, "revision": workflow["revision"]})
    api_post(page, f"/api/workflows/{workflow['id']}/publish/", {})

    page.goto(f"/workflows/{workflow['id']}")
    page.get_by_role("button", name="Versions").click()
    panel = page.get_by_test_id("versions-panel")
    expect(panel.get_by_test_id("version-2")).to_contain_text("live")
    expect(panel.get_by_test_id("version-1")).to_contain_text(USERNAME)
    panel.get_by_test_id("version-1").get_by_role("button", name="Compare with draft").click()
    expect(panel.get_by_test_id("version-diff")).to_contain_text("node llm_1: system_prompt")
    expect(panel.get_by_test_id("version-diff")).to_contain_text("Answer in French.")

    page.once("dialog", lambda dialog: dialog.accept())
    panel.get_by_test_id("version-1").get_by_role("button", name="Restore").click()
    expect(panel).to_be_hidden()
    expect(page.get_by_text("The draft is now version 1")).to_be_visible()
    draft = api_get(page, f"/api/workflows/{workflow['id']}/")
    assert draft["graph"] == workflow["graph"] and draft["revision"] == workflow["revision"] + 2
    assert draft["published_version"] == 2  # restoring changes the draft only
    # the editor holds the restored draft and its revision: the next edit saves without a conflict
    page.get_by_label("Workflow name").fill("Support (restored)")
    expect(page.get_by_test_id("save-status")).to_have_attribute("data-status", "saved")
    assert api_get(page, f"/api/workflows/{workflow['id']}/")["name"] == "Support (restored)"


def test_threads_are_found_renamed_and_deleted_and_runs_link_to_them(page, browser_user, fake_llm):
    log_in(page)
    workflow = a_chatbot(page, fake_llm)
    first = api_post(page, f"/api/workflows/{workflow['id']}/chat/", {"message": "about llamas"})
    api_post(page, f"/api/workflows/{workflow['id']}/chat/", {"message": "about whales"})

    page.goto(f"/workflows/{workflow['id']}/runs")
    page.get_by_test_id(f"run-thread-{first['run']}").click()
    expect(page.locator(".transcript-msg")).to_have_count(2)
    expect(page.locator(".transcript")).to_contain_text("echo: about llamas")

    page.get_by_role("button", name="Rename").click()
    page.get_by_label("Thread title").fill("Llama questions")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="Llama questions")).to_be_visible()

    page.get_by_role("link", name="Threads", exact=True).first.click()
    page.get_by_label("Search messages").fill("LLAMAS")
    page.get_by_role("button", name="Search").click()
    rows = page.locator(".threads-table tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Llama questions")

    # deleting asks first: dismissed, nothing happens; accepted, the thread and its words are gone
    page.once("dialog", lambda dialog: dialog.dismiss())
    rows.first.get_by_role("button", name="Delete").click()
    expect(rows).to_have_count(1)
    messages = []
    page.once("dialog", lambda dialog: (messages.append(dialog.message), dialog.accept()))
    rows.first.get_by_role("button", name="Delete").click()
    expect(page.get_by_text("No thread mentions that")).to_be_visible()
    assert "2 messages, its memory and its runs" in messages[0]
    assert page.request.get(f"/api/threads/{first['thread']}/messages/").status == 404
    assert api_get(page, f"/api/threads/?workflow={workflow['id']}")["count"] == 1


def test_the_share_panel_sets_spend_limits_and_shows_todays_use(page, browser_user, fake_llm):
    log_in(page)
    workflow = a_chatbot(page, fake_llm)
    api_post(page, f"/api/workflows/{workflow['id']}/publish/", {})
    api_post(page, f"/api/workflows/{workflow['id']}/chat/", {"message": "hi"})

    page.goto(f"/workflows/{workflow['id']}")
    page.get_by_role("button", name="Share / Triggers").click()
    section = page.get_by_test_id("limits-section")
    expect(section.get_by_test_id("limits-today")).to_contain_text("13 tokens")
    section.get_by_label("Whole workflow: tokens a day").fill("1.5")
    section.get_by_role("button", name="Save limits").click()
    expect(page.get_by_text("Whole workflow: tokens must be a whole number")).to_be_visible()
    section.get_by_label("Whole workflow: tokens a day").fill("13")
    section.get_by_label("Each widget visitor: cost a day").fill("0.5")
    section.get_by_role("button", name="Save limits").click()
    expect(page.get_by_text("Spend limits saved.")).to_be_visible()
    limits = api_get(page, f"/api/workflows/{workflow['id']}/limits/")
    assert limits["workflow"] == {"tokens": 13, "cost": None} and limits["visitor"] == {"tokens": None, "cost": 0.5}
    refused = api_post(page, f"/api/workflows/{workflow['id']}/chat/", {"message": "again"})
    assert refused["status"] == "failed" and refused["error"].startswith("Daily limit reached")
    page.get_by_role("button", name="Close").click()
    page.get_by_role("button", name="Share / Triggers").click()
    expect(page.get_by_test_id("limits-today")).to_contain_text("1 refused")


def test_workflow_files_are_exported_and_imported_from_the_ui(page, browser_user, fake_llm, tmp_path):
    log_in(page)
    workflow = a_chatbot(page, fake_llm, name="Exported bot")
    page.goto(f"/workflows/{workflow['id']}")
    with page.expect_download() as download:
        page.get_by_role("button", name="Export").click()
    assert download.value.suggested_filename == "exported-bot.skein.json"
    path = tmp_path / "exported-bot.skein.json"
    download.value.save_as(path)
    exported = json.loads(path.read_text())
    assert exported["skein"] == 1 and exported["graph"]["nodes"][1]["data"]["provider"] == {"name": "fake", "kind": "openai_compatible"}

    page.goto("/")
    page.get_by_test_id("import-input").set_input_files(str(path))
    page.wait_for_url(lambda url: "/workflows/" in url and f"/workflows/{workflow['id']}" not in url)
    expect(page.get_by_label("Workflow name")).to_have_value("Exported bot")
    imported = api_get(page, f"/api/workflows/{api_get(page, '/api/workflows/')['results'][0]['id']}/")
    assert imported["id"] != workflow["id"] and imported["errors"] == []
    assert imported["graph"]["nodes"][1]["data"]["provider"] == workflow["graph"]["nodes"][1]["data"]["provider"]

    bad = tmp_path / "newer.skein.json"
    bad.write_text(json.dumps({**exported, "skein": 2}))
    page.goto("/")
    page.get_by_test_id("import-input").set_input_files(str(bad))
    expect(page.get_by_text("newer than this Skein reads")).to_be_visible()
