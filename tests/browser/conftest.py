"""Browser tests: Playwright's sync API driving Debian's Chromium against pytest-django's live_server.

Needs ``apt-get install chromium`` (Playwright cannot download browsers here) and a built front end
(``npm ci && npm run build`` in frontend/; ``make test`` builds it first).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.browser.helpers import PASSWORD, USERNAME

CHROMIUM = os.environ.get("SKEIN_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
FRONTEND_INDEX = Path(__file__).resolve().parents[2] / "frontend" / "dist" / "index.html"


@pytest.fixture(scope="session")
def built_frontend() -> Path:
    if not FRONTEND_INDEX.exists():
        pytest.fail(
            f"the front end is not built: {FRONTEND_INDEX} is missing. "
            "Build it with `cd frontend && npm ci && npm run build` (make test does this first).",
            pytrace=False,
        )
    return FRONTEND_INDEX


@pytest.fixture(scope="session")
def loaded_urlconf():
    """Import the URLconf (and litellm behind it, >10 s on a small machine) before the browser's first
    request, so page loads are not timed against one-off import work in the live server's thread."""
    from django.urls import get_resolver

    return get_resolver().url_patterns


@pytest.fixture(scope="module")
def chromium():
    """One browser per test module. Playwright's sync API keeps an event loop running in the test
    thread while it lives, and Django's ORM refuses to run in a thread with a running loop unless
    told it is safe (here it is: the loop is Playwright's). Both end with the module, so the other
    test modules run without either."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium is missing at {CHROMIUM}: install Debian's package with `apt-get install -y chromium`", pytrace=False)
    from playwright.sync_api import sync_playwright

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


ARTIFACTS = Path(os.environ.get("SKEIN_BROWSER_ARTIFACTS", "/tmp/skein-browser-artifacts"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.browser_failed = report.failed


@contextmanager
def open_page(request, chromium, base_url: str, *, timeout_ms: int = 15_000, height: int = 800):
    """A page of a fresh browser context on ``base_url``; its JavaScript errors in ``page.js_errors``,
    a screenshot when the test failed, and any Content-Security-Policy violation fails the test."""
    context = chromium.new_context(viewport={"width": 1280, "height": height}, accept_downloads=True, base_url=base_url)
    context.set_default_timeout(timeout_ms)
    # Every page the app serves runs under its Content-Security-Policy: any violation fails the test.
    context.add_init_script(
        "window.__violations = [];"
        "document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));"
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.js_errors = errors
    violations: list = []
    try:
        yield page
        violations = page.evaluate("window.__violations || []") if not page.is_closed() else []
        if getattr(request.node, "browser_failed", False):
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            shot = ARTIFACTS / f"{request.node.name}.png"
            page.screenshot(path=str(shot))
            print(f"screenshot of the failure: {shot}; page errors: {errors}")
    finally:
        context.close()
    assert violations == [], f"the page broke its Content-Security-Policy: {violations}"


@pytest.fixture
def page(request, chromium, built_frontend, loaded_urlconf, live_server):
    with open_page(request, chromium, live_server.url) as page:
        yield page


@pytest.fixture
def browser_user(django_user_model):
    return django_user_model.objects.create_user(USERNAME, password=PASSWORD)


@pytest.fixture(scope="module")
def daphne(django_db_setup, django_db_blocker, tmp_path_factory):
    """Daphne serving Skein in the embedded mode (turns run in it), on the test database: what a
    browser must talk to when it watches a turn live (the live_server's WSGI buffers streams)."""
    from django.db import connection

    from tests.realtime_fixtures import WIDGET_JS
    from tests.stack import full_mode_env, start_daphne

    if not WIDGET_JS.exists():
        pytest.fail(f"the widget is not built: {WIDGET_JS} is missing (cd frontend/widget && npm ci && npm run build)", pytrace=False)
    with django_db_blocker.unblock():
        name = connection.settings_dict["NAME"]
    # The fake model and tool servers listen on loopback, which the network guard lets through only
    # when listed (the embedded mode allows loopback anyway; listing it keeps that true in any mode).
    env = full_mode_env(name, "", SKEIN_WIDGET_BURST=100, SKEIN_PROVIDER_ALLOWED_HOSTS="127.0.0.1")
    web, base = start_daphne(env, tmp_path_factory.mktemp("daphne"))
    try:
        yield base
    finally:
        web.stop()


@pytest.fixture
def live_page(request, chromium, built_frontend, daphne):
    """A page on the daphne server (see ``daphne``), for watching turns as they happen."""
    with open_page(request, chromium, daphne, timeout_ms=20_000) as page:
        yield page
