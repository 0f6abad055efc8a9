"""The first hour of a new user, in a browser, against the embedded server `make run` starts on a
clean database with no provider key: log in, create a workflow from each template and one on an
empty canvas by dragging nodes, chat with each and get answers from the bundled local model
(SmolLM2 on llama.cpp, for real), publish one with an interval schedule and watch its runs appear
with no other process started, and read the API docs with the network blocked."""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import open_page
from tests.browser.helpers import connect, drop_from_palette, log_in, select_node
from tests.stack import embedded_env, embedded_prepare, start_embedded

pytestmark = [pytest.mark.browser]

TEMPLATES = ("Chatbot", "Chatbot with summarizing memory", "Router")
# The bundled model's replies, kept short: the walk waits for each (SKEIN_LOCAL_MAX_TOKENS).
REPLY_TOKENS = 40
ANSWER_TIMEOUT_MS = 180_000


@pytest.fixture(scope="module")
def installation(tmp_path_factory, built_frontend):
    """`make run` on a fresh machine: migrate, bootstrap (the demo account, the local provider and
    the demos), then the embedded server, with no provider key in the environment."""
    directory = tmp_path_factory.mktemp("first-hour")
    env = embedded_env(directory / "db.sqlite3", SKEIN_LOCAL_MAX_TOKENS=REPLY_TOKENS)
    embedded_prepare(env, demos=True)
    server, base = start_embedded(env, directory)
    yield base
    server.stop()


@pytest.fixture
def browser_page(request, chromium, installation):
    with open_page(request, chromium, installation, timeout_ms=20_000, height=860) as page:
        yield page


def chat_and_expect_an_answer(page, message: str) -> str:
    page.get_by_role("tab", name="Test chat").click()
    chat = page.get_by_test_id("test-chat")
    box = chat.get_by_role("textbox", name="Message")
    box.fill(message)
    box.press("Enter")
    answers = chat.get_by_test_id("chat-assistant")
    expect(answers.last.locator(".text")).not_to_be_empty(timeout=ANSWER_TIMEOUT_MS)
    expect(answers.last).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
    expect(chat.get_by_test_id("chat-error")).to_have_count(0)
    return answers.last.locator(".text").inner_text()


def expect_on_the_local_model(page, node_id: str) -> None:
    select_node(page, node_id)
    expect(page.locator('select[name="provider"] option:checked')).to_have_text(re.compile(r"^Local model"))
    expect(page.locator('[name="model"]')).to_have_value("smollm2")


def test_the_first_hour_with_no_keys(browser_page):
    page = browser_page
    log_in(page, "demo", "demo")

    # Each template answers at once, on the bundled model: nothing to configure, nothing to fix.
    for name in TEMPLATES:
        page.goto("/")
        page.locator(".template-card", has=page.locator("strong", has_text=re.compile(f"^{re.escape(name)}$"))).click()
        page.wait_for_url(re.compile(r"/workflows/\d+$"))
        expect(page.locator(".react-flow__node").first).to_be_visible()
        llm_node = page.locator('[data-testid^="node-llm"]').first
        expect(llm_node).to_contain_text("smollm2")
        expect(page.get_by_test_id("problems-pill")).to_have_count(0)
        assert chat_and_expect_an_answer(page, "Hello! What can you do?").strip(), name

    # An empty canvas, built by dragging nodes from the palette.
    page.goto("/")
    page.get_by_role("button", name="New workflow").click()
    page.wait_for_url(re.compile(r"/workflows/\d+$"))
    workflow_path = urlparse(page.url).path
    page.locator(".react-flow__controls-zoomout").click()
    drop_from_palette(page, "trigger.chat", 110, 120)
    drop_from_palette(page, "llm", 380, 120)
    drop_from_palette(page, "output", 650, 120)
    drop_from_palette(page, "trigger.schedule", 110, 380)
    connect(page, "chat_1", "output", "llm_1", "input")
    connect(page, "llm_1", "output", "output_1", "input")
    connect(page, "schedule_1", "output", "llm_1", "input")
    expect(page.locator(".react-flow__edge")).to_have_count(3)
    expect_on_the_local_model(page, "llm_1")  # as dropped
    select_node(page, "schedule_1")
    page.locator('input[name="interval_seconds"]').fill("3")
    page.locator('textarea[name="input"], input[name="input"]').first.fill("Say hi.")
    expect(page.get_by_test_id("save-status")).to_have_attribute("data-status", "saved")
    expect(page.get_by_test_id("problems-pill")).to_have_count(0)
    assert chat_and_expect_an_answer(page, "What is the capital of France?").strip()

    # Published with its interval schedule: the server fires it, with no other process started.
    page.get_by_role("button", name="Publish", exact=True).click()
    panel = page.get_by_role("dialog", name="Share & triggers")
    card = panel.get_by_test_id("trigger-schedule_1")
    expect(card).to_contain_text("Next runs")
    expect(card.get_by_test_id("scheduler-warning")).to_have_count(0)
    page.keyboard.press("Escape")
    page.goto(f"{workflow_path}/runs")
    scheduled = page.locator('tr[data-testid^="run-row-"]', has=page.locator("td", has_text=re.compile(r"^schedule$")))
    for _ in range(60):
        if scheduled.filter(has=page.locator(".badge-succeeded")).count() >= 2:
            break
        page.wait_for_timeout(2000)  # the Runs page refreshes when asked; a schedule fires every 3 s
        page.get_by_role("button", name="Refresh").click()
    expect(scheduled.filter(has=page.locator(".badge-succeeded"))).not_to_have_count(0)
    assert scheduled.filter(has=page.locator(".badge-succeeded")).count() >= 2
    assert page.js_errors == []


def test_the_api_docs_render_with_the_network_blocked(browser_page, installation):
    page = browser_page
    refused: list[str] = []

    def only_this_server(route):
        if urlparse(route.request.url).hostname in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    page.context.route("**/*", only_this_server)
    page.goto("/api/docs/")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Skein API", timeout=30_000)
    expect(page.locator(".swagger-ui .opblock").first).to_be_visible()  # the operations, read from /api/schema/
    assert not [url for url in refused if "swagger" in url or "jsdelivr" in url or "unpkg" in url], refused
    assert page.js_errors == []


class _HtmlServer(BaseHTTPRequestHandler):
    """A web server that is not an API: every answer is an HTML page."""

    def log_message(self, *args):
        pass

    def _page(self):
        body = b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _page


def test_an_openai_compatible_provider_that_answers_html_is_diagnosed(browser_page):
    """The connection test's diagnosis (reason ``not_openai_compatible``, the contract shared with
    the connection-test work of issue 15) as a new user meets it on the Providers page."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _HtmlServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    page = browser_page
    try:
        log_in(page, "demo", "demo")
        page.goto("/providers")
        form = page.get_by_role("form", name="Add a provider")
        form.get_by_label("Name").fill("my web server")
        form.get_by_label("Kind").select_option("openai_compatible")
        form.get_by_label("Server URL").fill(f"http://127.0.0.1:{server.server_address[1]}/v1")
        form.get_by_role("button", name="Add provider").click()
        row = page.get_by_role("row", name=re.compile("my web server"))
        row.get_by_role("button", name="Test connection").click()
        result = page.get_by_test_id("connection-result")
        expect(result).to_contain_text("Failed", timeout=30_000)
        expect(result).to_contain_text("not openai compatible")
        expect(result).not_to_contain_text("Connected")
    finally:
        server.shutdown()
