"""The single-page app's HTML (config/urls.py): served for every non-API path, never cached, and on
an editor page of a logged-in user, preloading the API reads the editor starts with."""

import re

import pytest

INDEX = """<!doctype html>
<html><head><script type="module" crossorigin src="/static/assets/index-abcd1234.js"></script></head>
<body><div id="root"></div></body></html>"""

pytestmark = pytest.mark.django_db


@pytest.fixture
def dist(settings, tmp_path):
    (tmp_path / "index.html").write_text(INDEX)
    settings.FRONTEND_DIST = tmp_path
    return tmp_path


def preloads(response) -> list[str]:
    return re.findall(r'<link rel="preload"[^>]*>', response.content.decode())


def test_an_editor_page_preloads_the_editors_reads_after_the_app_itself(client, user, dist):
    client.force_login(user)
    response = client.get("/workflows/12")
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-cache"
    assert preloads(response) == [
        f'<link rel="preload" href="{url}" as="fetch" crossorigin>'
        for url in ("/api/auth/me/", "/api/node-types/", "/api/workflows/12/", "/api/providers/", "/api/providers/default/")
    ]
    html = response.content.decode()
    assert html.index("/static/assets/index-abcd1234.js") < html.index('rel="preload"') < html.index("</head>")


def test_other_pages_and_logged_out_visitors_get_the_page_as_built(client, user, dist):
    response = client.get("/workflows/12")
    assert response.status_code == 200 and preloads(response) == []
    client.force_login(user)
    for path in ("/", "/workflows/12/runs", "/runs/3", "/providers"):
        response = client.get(path)
        assert response.status_code == 200 and response.content.decode() == INDEX, path


def test_without_a_built_front_end_the_page_says_how_to_build_it(client, settings, tmp_path):
    settings.FRONTEND_DIST = tmp_path
    response = client.get("/workflows/12")
    assert response.status_code == 503
    assert b"make frontend" in response.content
