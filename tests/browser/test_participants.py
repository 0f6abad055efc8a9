"""Participants in a real browser: the participant page (facts with their source messages, edited,
added and deleted; memories; forgetting), and a widget embedded on another origin naming its
logged-in user with a signed id (and refusing a forged one)."""

from __future__ import annotations

import functools
import re
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from playwright.sync_api import expect

from participants.services import identity_sign
from tests.browser.helpers import api_get, api_post, log_in
from tests.browser.test_widget import expect_reply, open_widget
from tests.test_participants import extracting_responder, facts_graph, is_extraction

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_participant_page_shows_and_edits_facts_and_forgets(page, browser_user, fake_llm):
    fake_llm.responder = extracting_responder
    log_in(page)
    provider = api_post(
        page, "/api/providers/", {"name": "fake", "kind": "openai_compatible", "api_base": fake_llm.base_url, "api_key": "k"}
    )
    graph = facts_graph(provider["id"], history={"type": "memory.buffer", "key": "participant"})
    workflow = api_post(page, "/api/workflows/", {"name": "Concierge", "graph": graph})
    first = api_post(page, f"/api/workflows/{workflow['id']}/chat/", {"message": "I live in Lisbon", "participant": "ana@example.com"})
    api_post(page, f"/api/workflows/{workflow['id']}/chat/", {"message": "I moved to Porto", "participant": "ana@example.com"})
    api_post(page, f"/api/workflows/{workflow['id']}/chat/", {"message": "my name is Bruno", "participant": "bruno"})

    page.goto("/participants")
    expect(page.get_by_role("heading", name="Participants")).to_be_visible()
    expect(page.locator(".participants-table tbody tr")).to_have_count(2)
    page.get_by_role("link", name="ana@example.com").click()
    expect(page.get_by_test_id("participant-name")).to_have_text("ana@example.com")

    # every fact with the message it came from; the superseded value kept apart
    current = page.get_by_test_id("fact-city")
    expect(current).to_contain_text("Porto")
    expect(current.get_by_test_id("fact-source")).to_have_text("I moved to Porto")
    old = page.get_by_test_id("fact-city-superseded")
    expect(old).to_contain_text("Lisbon")
    expect(old).to_contain_text("superseded")
    expect(old.get_by_test_id("fact-source")).to_have_text("I live in Lisbon")
    # the participant's memory across their two threads, and the threads
    expect(page.get_by_test_id("participant-memory")).to_contain_text("I live in Lisbon")
    expect(page.get_by_test_id("participant-memory")).to_contain_text("I moved to Porto")
    expect(page.locator(".participant-threads li")).to_have_count(2)

    # edit a fact
    current.get_by_role("button", name="Edit").click()
    page.get_by_label("Value of city").fill("Coimbra")
    current.get_by_role("button", name="Save").click()
    expect(page.get_by_test_id("fact-city")).to_contain_text("Coimbra")
    # add one
    page.get_by_label("New fact key").fill("diet")
    page.get_by_label("New fact value").fill("vegetarian")
    page.get_by_role("button", name="Add fact").click()
    expect(page.get_by_test_id("fact-diet")).to_contain_text("vegetarian")
    expect(page.get_by_test_id("fact-diet")).to_contain_text("added by you")
    participant = api_get(page, f"/api/runs/{first['run']}/")["participant"]
    facts = {f["key"]: f["value"] for f in api_get(page, f"/api/participants/{participant}/facts/?current=true")}
    assert facts == {"city": "Coimbra", "diet": "vegetarian"}
    # delete one
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete fact diet").click()
    expect(page.get_by_test_id("fact-diet")).to_have_count(0)

    # the run that learnt the fact shows the extraction request, exactly as sent
    page.get_by_test_id("fact-city").get_by_role("link", name=re.compile("run #")).click()
    extraction = page.get_by_test_id("extraction-facts")
    expect(extraction).to_contain_text("0 new, 1 changed")
    extraction.locator(".step-head").click()
    expect(extraction.get_by_test_id("sent-messages")).to_contain_text("Participant: I moved to Porto")
    page.go_back()

    # forget the participant: nothing of theirs is left, Bruno stays
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Forget participant").click()
    expect(page.get_by_role("heading", name="Participants")).to_be_visible()
    expect(page.locator(".participants-table tbody tr")).to_have_count(1)
    expect(page.locator(".participants-table")).to_contain_text("bruno")
    assert api_get(page, f"/api/threads/?workflow={workflow['id']}")["count"] == 1


@pytest.fixture
def facts_site(tmp_path, daphne, user, fake_llm):
    """A facts chatbot, published, and a page on another origin that embeds it for a signed-in user."""
    from rest_framework.authtoken.models import Token

    auth = {"Authorization": f"Token {Token.objects.create(user=user).key}"}
    base = daphne
    provider = httpx.post(
        f"{base}/api/providers/",
        json={"name": "fake", "kind": "openai_compatible", "api_base": fake_llm.base_url, "api_key": "k"},
        headers=auth,
        timeout=60,
    ).json()
    graph = facts_graph(provider["id"], history={"type": "memory.buffer", "key": "participant"})
    workflow = httpx.post(f"{base}/api/workflows/", json={"name": "Shop", "graph": graph}, headers=auth, timeout=60).json()
    assert httpx.post(f"{base}/api/workflows/{workflow['id']}/publish/", headers=auth, timeout=60).status_code == 201
    settings = httpx.get(f"{base}/api/workflows/{workflow['id']}/widget/", headers=auth, timeout=60).json()
    root = tmp_path / "site"
    root.mkdir()

    def page_for(name: str, user_id: str, signature: str) -> None:
        snippet = settings["embed_snippet"].replace(
            "async>", f'async data-title="Shop helper" data-participant="{user_id}" data-participant-signature="{signature}">'
        )
        (root / name).write_text(f"<!doctype html><html><head><title>A shop</title></head><body><h1>Signed in</h1>{snippet}</body></html>")

    page_for("signed.html", "customer-9", identity_sign(settings["identity_secret"], "customer-9"))
    page_for("forged.html", "customer-9", identity_sign("wid_a-guess", "customer-9"))
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{httpd.server_address[1]}"
    response = httpx.patch(f"{base}/api/workflows/{workflow['id']}/widget/", json={"allowed_origins": [origin]}, headers=auth, timeout=60)
    assert response.status_code == 200
    try:
        yield {"url": origin + "/", "workflow": workflow}
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def visitor(chromium):
    context = chromium.new_context()
    context.set_default_timeout(20_000)
    page = context.new_page()
    yield page
    context.close()


def test_a_signed_widget_embed_on_another_origin_carries_the_user(facts_site, visitor, fake_llm):
    from memory.models import Fact
    from participants.models import Participant
    from runs.models import Thread

    fake_llm.responder = extracting_responder
    page = visitor
    page.goto(facts_site["url"] + "signed.html")
    open_widget(page)
    page.get_by_role("textbox", name="Message").fill("I live in Lisbon")
    page.keyboard.press("Enter")
    expect_reply(page, 1, "echo: I live in Lisbon")
    participant = Participant.objects.get()
    assert participant.external_id == "customer-9"
    assert Thread.objects.get().participant_id == participant.pk
    assert Fact.objects.get(participant=participant).value == "Lisbon"

    # A new conversation on another day: the user's facts and history follow them.
    page.evaluate("localStorage.clear()")
    page.reload()
    open_widget(page)
    page.get_by_role("textbox", name="Message").fill("where do I live?")
    page.keyboard.press("Enter")
    expect_reply(page, 1, "echo: where do I live?")
    assert Thread.objects.filter(participant=participant).count() == 2
    sent = [r for r in fake_llm.requests_for("agent-model") if not is_extraction(r)][-1].messages
    assert any("- city: Lisbon" in m["content"] for m in sent if m["role"] == "system")

    # The same id with a forged signature is refused, and says why.
    page.goto(facts_site["url"] + "forged.html")
    dialog = open_widget(page, usable=False)
    expect(dialog).to_contain_text("This chat cannot start: the participant's signature is not valid")
    assert Thread.objects.filter(participant=participant).count() == 2


def test_the_test_chat_talks_as_a_participant(page, browser_user, fake_llm):
    from participants.models import Participant
    from runs.models import Run

    log_in(page)
    provider = api_post(
        page, "/api/providers/", {"name": "fake", "kind": "openai_compatible", "api_base": fake_llm.base_url, "api_key": "k"}
    )
    workflow = api_post(
        page,
        "/api/workflows/",
        {"name": "Concierge", "graph": facts_graph(provider["id"], history={"type": "memory.buffer", "key": "participant"})},
    )
    page.goto(f"/workflows/{workflow['id']}")
    page.get_by_role("tab", name="Test chat").click()
    field = page.get_by_label("Talk as participant")
    field.fill("tester-1")
    field.press("Enter")
    page.get_by_role("textbox", name="Message", exact=True).fill("remember the blue door")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.get_by_test_id("chat-assistant")).to_contain_text("echo: remember the blue door", timeout=60_000)
    run = Run.objects.get()
    assert run.participant == Participant.objects.get(external_id="tester-1") and run.warnings == []
    # the choice is kept for the workflow; a new conversation continues the participant's memory
    page.reload()
    page.get_by_role("tab", name="Test chat").click()
    expect(page.get_by_label("Talk as participant")).to_have_value("tester-1")
    page.get_by_role("button", name="New conversation").click()
    page.get_by_role("textbox", name="Message", exact=True).fill("which door?")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.get_by_test_id("chat-assistant").last).to_contain_text("echo: which door?", timeout=60_000)
    assert Run.objects.filter(participant__external_id="tester-1").values("thread").distinct().count() == 2
    answered = [r for r in fake_llm.requests_for("agent-model") if not is_extraction(r)]
    assert {"role": "user", "content": "remember the blue door"} in answered[-1].messages
