"""Shared fixtures. What each group of tests needs:

- everything: the Python environment of ``make test`` (PostgreSQL is used when DATABASE_URL points
  at it, as ``make test`` does; the embedded SQLite works for all but the ``postgres`` tests);
- ``@pytest.mark.postgres``: PostgreSQL at DATABASE_URL (real row locks, concurrent transactions);
- ``@pytest.mark.redis``: Redis at 127.0.0.1:6379 (or SKEIN_TEST_REDIS_URL), for real workers;
- ``@pytest.mark.browser``: Debian's Chromium at /usr/bin/chromium and a built front end.
A missing service fails those tests with a message that names it; nothing is skipped.
"""

from __future__ import annotations

import os

import pytest

from tests.fakellm import FakeLLM
from tests.graphs import chat_graph

TEST_REDIS_URL = os.environ.get("SKEIN_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """One PostgreSQL test database per pytest process, so that runs side by side never collide."""
    from django.conf import settings

    for database in settings.DATABASES.values():
        if database["ENGINE"].endswith("postgresql"):
            database.setdefault("TEST", {})["NAME"] = f"test_skein_{os.getpid()}"


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Each test starts with an empty cache: login failures and API throttles counted by an earlier
    test (whose user may have had the same id) never refuse this one's requests."""
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture(scope="session")
def fake_llm_server():
    server = FakeLLM().start()
    yield server
    server.stop()


@pytest.fixture
def fake_llm(fake_llm_server):
    fake_llm_server.reset()
    yield fake_llm_server
    fake_llm_server.reset()


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("alice", password="alice-password")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user("mallory", password="mallory-password")


@pytest.fixture
def api(user):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def other_api(other_user):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(other_user)
    return client


@pytest.fixture
def provider(user, fake_llm):
    from providers.services import provider_create

    return provider_create(owner=user, name="fake", kind="openai_compatible", api_base=fake_llm.base_url, api_key="test-key")


@pytest.fixture
def make_workflow(api):
    def make(graph, name="test workflow"):
        response = api.post("/api/workflows/", {"name": name, "graph": graph}, format="json")
        assert response.status_code == 201, response.content
        return response.json()

    return make


@pytest.fixture
def chat(api):
    def send(workflow_id, message, thread=None, expect=200):
        body = {"message": message} | ({"thread": thread} if thread else {})
        response = api.post(f"/api/workflows/{workflow_id}/chat/", body, format="json")
        assert response.status_code == expect, response.content
        return response.json()

    return send


@pytest.fixture
def chatbot(make_workflow, provider):
    """trigger.chat -> llm -> output, on the fake model."""
    return make_workflow(chat_graph(provider.pk))


@pytest.fixture(scope="session")
def require_postgres():
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.fail("this test needs PostgreSQL: run it with DATABASE_URL=postgres://postgres@127.0.0.1:5432/test (as `make test` does)")


@pytest.fixture(scope="session")
def require_redis():
    import redis

    try:
        redis.Redis.from_url(TEST_REDIS_URL, socket_connect_timeout=2).ping()
    except redis.exceptions.ConnectionError as exc:
        pytest.fail(f"this test needs Redis at {TEST_REDIS_URL} (set SKEIN_TEST_REDIS_URL): {exc}")
    return TEST_REDIS_URL
