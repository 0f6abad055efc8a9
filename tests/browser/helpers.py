"""Steps the browser tests share: logging in, API calls through the browser session, canvas gestures."""

from __future__ import annotations

USERNAME = "editor"
PASSWORD = "editor-password-1"


def log_in(page, username: str = USERNAME, password: str = PASSWORD) -> None:
    page.goto("/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Workflows", exact=True).wait_for()


def api_call(page, method: str, path: str, body: dict | None = None) -> dict:
    """A JSON request through the logged-in browser session, as the front end sends it (cookie + CSRF header)."""
    token = next((c["value"] for c in page.context.cookies() if c["name"] == "csrftoken"), "")
    response = page.request.fetch(path, method=method, data=body, headers={"X-CSRFToken": token})
    assert response.ok, f"{method} {path} answered {response.status}: {response.text()}"
    return response.json() if response.text() else {}


def api_post(page, path: str, body: dict) -> dict:
    return api_call(page, "POST", path, body)


def api_get(page, path: str) -> dict:
    return api_call(page, "GET", path)


def drop_from_palette(page, node_type: str, x: float, y: float) -> None:
    """Drag a palette item onto the canvas, dropping it at (x, y) within the canvas."""
    page.get_by_test_id(f"palette-{node_type}").drag_to(page.get_by_test_id("canvas"), target_position={"x": x, "y": y})


def handle(page, node_id: str, kind: str, port: str):
    return page.locator(f'[data-testid="node-{node_id}"] .react-flow__handle.{kind}[data-handleid="{port}"]')


def connect(page, source: str, source_port: str, target: str, target_port: str) -> None:
    """Draw an edge with the mouse, from a source handle to a target handle."""
    start = handle(page, source, "source", source_port).bounding_box()
    end = handle(page, target, "target", target_port).bounding_box()
    assert start and end, f"handles {source}.{source_port} / {target}.{target_port} are not on screen"
    page.mouse.move(start["x"] + start["width"] / 2, start["y"] + start["height"] / 2)
    page.mouse.down()
    page.mouse.move(end["x"] + end["width"] / 2, end["y"] + end["height"] / 2, steps=12)
    page.mouse.up()


def select_node(page, node_id: str) -> None:
    page.get_by_test_id(f"node-{node_id}").locator(".sk-node-title").click()
