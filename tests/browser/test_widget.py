"""The embeddable widget in a real browser, on a plain HTML page served from another port.

Daphne runs the app (embedded mode, against the test database); the page embeds the widget with
the snippet the app shows; Chromium (Playwright) chats, reloads, drops the connection mid-reply.
"""

from __future__ import annotations

import functools
import re
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from playwright.sync_api import expect

from tests.fakellm import Reply
from tests.realtime_fixtures import WIDGET_JS, published  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REPLY = "Our shop opens at nine and closes at six, every day except Sunday."

# Records the page's WebSockets so a test can drop one, as a flaky network would.
RECORD_SOCKETS = """
window.__sockets = [];
const Native = window.WebSocket;
window.WebSocket = class extends Native {
  constructor(...args) { super(...args); window.__sockets.push(this); }
};
"""


@pytest.fixture
def server(daphne, published, user):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=user).key
    return {"base": daphne, "auth": {"Authorization": f"Token {token}"}, "workflow": published["workflow"]["id"]}


@pytest.fixture
def site(tmp_path, server):
    """A plain page on another port with the embed snippet the app shows its owner."""
    settings = httpx.get(f"{server['base']}/api/workflows/{server['workflow']}/widget/", headers=server["auth"], timeout=60).json()
    snippet = settings["embed_snippet"].replace("async>", 'async data-title="Shop helper" data-starters="Opening hours?|Prices?">')
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text(f"<!doctype html><html><head><title>A shop</title></head><body><h1>A shop</h1>{snippet}</body></html>")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield {"url": f"http://127.0.0.1:{httpd.server_address[1]}/", "origin": f"http://127.0.0.1:{httpd.server_address[1]}"}
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def visitor(chromium):
    context = chromium.new_context()
    context.set_default_timeout(20_000)
    context.add_init_script(RECORD_SOCKETS)
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    yield page
    context.close()


def allow(server, origins):
    response = httpx.patch(
        f"{server['base']}/api/workflows/{server['workflow']}/widget/",
        json={"allowed_origins": origins},
        headers=server["auth"],
        timeout=60,
    )
    assert response.status_code == 200, response.text


def open_widget(page, *, usable=True):
    page.get_by_role("button", name=re.compile("^Open chat")).click()
    dialog = page.get_by_role("dialog", name="Shop helper")
    expect(dialog).to_be_visible()
    if usable:
        expect(page.get_by_role("textbox", name="Message")).to_be_focused()
    return dialog


# Records each text the (first) reply bubble shows, to see it grow token by token.
WATCH_REPLY = """() => {
  window.__seen = [];
  const root = document.querySelector('[data-skein-widget]').shadowRoot;
  new MutationObserver(() => {
    const text = root.querySelector('.msg.assistant:not(.welcome) .text')?.textContent;
    if (text && window.__seen.at(-1) !== text) window.__seen.push(text);
  }).observe(root, { subtree: true, childList: true, characterData: true });
}"""


def messages(page):
    return page.get_by_role("log").locator(".msg:not(.welcome)")


def expect_reply(page, index, text, **kwargs):
    """The reply at ``index`` is complete (its run finished) and ends with ``text``."""
    reply = messages(page).nth(index)
    expect(reply).to_have_attribute("aria-busy", "false", **kwargs)
    expect(reply).to_have_text(re.compile(re.escape(text) + "$"), **kwargs)


def test_chat_stream_reload_and_continue(server, site, visitor, fake_llm):
    from runs.models import Thread

    allow(server, [site["origin"]])
    fake_llm.responder = lambda request: Reply(text=REPLY, token_delay=0.04)
    page = visitor
    page.goto(site["url"])
    dialog = open_widget(page)
    expect(dialog.get_by_role("group", name="Suggested questions").get_by_role("button")).to_have_text(["Opening hours?", "Prices?"])
    page.evaluate(WATCH_REPLY)
    dialog.get_by_role("button", name="Opening hours?").click()
    expect_reply(page, 1, REPLY)
    expect(messages(page)).to_have_count(2)
    # It streamed in: the bubble grew through several prefixes of the reply, in order.
    seen = page.evaluate("window.__seen")
    assert len(seen) >= 4 and seen[-1] == REPLY, seen
    assert all(REPLY.startswith(text) and len(text) < len(later) for text, later in zip(seen, seen[1:])), seen

    # Reload: the conversation comes back from the server, and goes on in the same thread.
    page.reload()
    open_widget(page)
    expect(messages(page)).to_have_count(2)
    expect(messages(page).nth(0)).to_contain_text("Opening hours?")
    expect(messages(page).nth(1)).to_contain_text(REPLY)
    fake_llm.responder = lambda request: Reply(text="From ten euros.")
    page.get_by_role("textbox", name="Message").fill("And prices?")
    page.keyboard.press("Enter")
    expect_reply(page, 3, "From ten euros.")
    expect(messages(page)).to_have_count(4)
    assert Thread.objects.count() == 1
    assert list(Thread.objects.get().messages.values_list("content", flat=True)) == [
        "Opening hours?",
        REPLY,
        "And prices?",
        "From ten euros.",
    ]

    # Keyboard: Escape closes the dialog and gives focus back to the launcher.
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_be_hidden()
    expect(page.get_by_role("button", name=re.compile("^Open chat"))).to_be_focused()

    # A new conversation starts a new thread.
    page.keyboard.press("Enter")
    page.get_by_role("button", name="New conversation").click()
    expect(messages(page)).to_have_count(0)
    page.get_by_role("textbox", name="Message").fill("Hello again")
    page.keyboard.press("Enter")
    expect_reply(page, 1, "From ten euros.")
    expect(messages(page)).to_have_count(2)
    assert Thread.objects.count() == 2
    assert page.errors == []


def test_a_dropped_connection_loses_and_duplicates_nothing(server, site, visitor, fake_llm):
    fake_llm.responder = lambda request: Reply(text=REPLY, token_delay=0.15)
    page = visitor
    page.goto(site["url"])
    open_widget(page)
    page.get_by_role("textbox", name="Message").fill("When are you open?")
    page.keyboard.press("Enter")
    reply = messages(page).nth(1)
    expect(reply).to_contain_text("Our shop")
    page.evaluate("window.__sockets.at(-1).close()")  # the connection drops mid-reply
    expect_reply(page, 1, REPLY, timeout=30_000)
    expect(messages(page)).to_have_count(2)
    assert page.evaluate("window.__sockets.length") == 2
    fake_llm.responder = lambda request: Reply(text="You're welcome.")
    page.get_by_role("textbox", name="Message").fill("Thanks")
    page.keyboard.press("Enter")
    expect_reply(page, 3, "You're welcome.")
    expect(messages(page)).to_have_count(4)
    assert page.errors == []


def test_a_refused_origin_says_so(server, site, visitor, fake_llm):
    allow(server, ["https://the-real-shop.example"])
    page = visitor
    page.goto(site["url"])
    open_widget(page, usable=False)
    expect(page.get_by_role("status")).to_have_text("This site is not allowed to use this chat widget.")
    expect(page.get_by_role("textbox", name="Message")).to_be_disabled()
    assert page.evaluate("window.__sockets.length") == 0
    assert fake_llm.requests == []


# Records every Content-Security-Policy violation of the page.
RECORD_VIOLATIONS = """
window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
"""


@pytest.fixture
def strict_site(tmp_path, server):
    """The embedding page, served with a strict Content-Security-Policy of its own: scripts and
    connections to the chat's origin only, no inline script or style at all."""
    settings = httpx.get(f"{server['base']}/api/workflows/{server['workflow']}/widget/", headers=server["auth"], timeout=60).json()
    snippet = settings["embed_snippet"].replace("async>", 'async data-title="Shop helper">')
    root = tmp_path / "strict"
    root.mkdir()
    (root / "index.html").write_text(
        f"<!doctype html><html><head><title>A strict shop</title></head><body><h1>A shop</h1>{snippet}</body></html>"
    )
    skein = server["base"]
    policy = (
        f"default-src 'none'; script-src {skein}; connect-src {skein} {skein.replace('http://', 'ws://')}; "
        "style-src 'none'; img-src 'none'; base-uri 'none'"
    )

    class Handler(SimpleHTTPRequestHandler):
        def end_headers(self):
            self.send_header("Content-Security-Policy", policy)
            super().end_headers()

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield {"url": f"http://127.0.0.1:{httpd.server_address[1]}/", "policy": policy}
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_the_widget_works_on_a_page_with_a_strict_content_security_policy(server, strict_site, visitor, fake_llm):
    fake_llm.responder = lambda request: Reply(text=REPLY, token_delay=0.02)
    page = visitor
    page.add_init_script(RECORD_VIOLATIONS)
    page.goto(strict_site["url"])
    dialog = open_widget(page)
    # the widget is styled (its stylesheet is a constructed one, which the page's policy allows)
    position = page.evaluate(
        "getComputedStyle(document.querySelector('[data-skein-widget]').shadowRoot.querySelector('.launcher')).position"
    )
    assert position == "fixed"
    expect(dialog).to_be_visible()
    page.get_by_role("textbox", name="Message").fill("When are you open?")
    page.keyboard.press("Enter")
    expect_reply(page, 1, REPLY)
    assert page.evaluate("window.__violations") == [] and page.errors == []
    # the app's own answers carry its policy; the widget script is served to any page
    script = httpx.get(f"{server['base']}/widget.js", timeout=60)
    assert script.status_code == 200


def test_on_a_phone_the_widget_reads_any_direction_marks_cut_replies_and_says_when_a_message_is_too_long(server, site, chromium, fake_llm):
    allow(server, [site["origin"]])
    context = chromium.new_context(viewport={"width": 390, "height": 780}, is_mobile=True, has_touch=True)
    context.set_default_timeout(20_000)
    page = context.new_page()
    try:
        page.goto(site["url"])
        launcher = page.get_by_role("button", name=re.compile("^Open chat"))
        expect(launcher.locator("svg path")).to_have_count(1)  # drawn, not an emoji a phone may lack
        assert launcher.inner_text().strip() == ""
        open_widget(page)
        box = page.get_by_role("textbox", name="Message")
        # 16 px: a phone does not zoom the page when the visitor taps the message box
        assert box.evaluate("el => getComputedStyle(el).fontSize") == "16px"

        box.fill("y" * 4001)
        alert = page.get_by_role("alert")
        expect(alert).to_have_text("4,001 characters: the limit is 4,000. Shorten the message to send it.")
        expect(page.get_by_role("button", name="Send", exact=True)).to_be_disabled()
        assert len(box.input_value()) == 4001

        fake_llm.responder = lambda request: Reply(text="مرحبا! متجرنا يفتح في", finish_reason="length")
        box.fill("שלום, מתי אתם פתוחים?")
        expect(alert).to_have_count(0)
        page.keyboard.press("Enter")
        expect_reply(page, 1, "Cut short: the reply reached its length limit.")
        user, reply = messages(page).nth(0), messages(page).nth(1)
        for bubble in (user, reply):
            assert bubble.get_attribute("dir") == "auto"
            assert bubble.evaluate("el => getComputedStyle(el).direction") == "rtl"
        expect(reply).to_contain_text("مرحبا! متجرنا يفتح في")
    finally:
        context.close()
