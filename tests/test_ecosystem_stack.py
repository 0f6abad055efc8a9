"""The ecosystem's interfaces on the full stack: daphne, a Celery worker, Redis and PostgreSQL.

The official ``openai`` client talks to daphne over real HTTP while the worker runs the turns; the
worker's metrics reach daphne's ``/metrics`` through the shared PROMETHEUS_MULTIPROC_DIR."""

from __future__ import annotations

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.fakellm import Reply
from tests.graphs import chat_graph

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]
METRICS_TOKEN = "stack-metrics-token"


@pytest.fixture(scope="module")
def stack(require_postgres, require_redis, tmp_path_factory, django_db_setup, django_db_blocker):
    from django.db import connection

    from tests.stack import full_stack

    with django_db_blocker.unblock():
        name = connection.settings_dict["NAME"]
    multiproc = tmp_path_factory.mktemp("prometheus")
    with full_stack(
        name,
        require_redis,
        tmp_path_factory.mktemp("ecosystem"),
        concurrency=4,
        PROMETHEUS_MULTIPROC_DIR=str(multiproc),
        SKEIN_METRICS_TOKEN=METRICS_TOKEN,
    ) as running:
        yield running


@pytest.fixture
def token(stack, user):
    response = httpx.post(f"{stack['base']}/api/auth/token/", json={"username": "alice", "password": "alice-password"}, timeout=60)
    return response.json()["token"]


@pytest.fixture
def bot(stack, token, fake_llm):
    with httpx.Client(base_url=stack["base"], headers={"Authorization": f"Token {token}"}, timeout=60) as http:
        provider = http.post(
            "/api/providers/", json={"name": "fake", "kind": "openai_compatible", "api_base": fake_llm.base_url, "api_key": "k"}
        ).json()
        workflow = http.post(
            "/api/workflows/", json={"name": "stack bot", "graph": chat_graph(provider["id"], memory={"type": "memory.buffer"})}
        ).json()
        assert http.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 201
    return str(workflow["id"])


def test_the_openai_client_and_prometheus_against_the_full_stack(stack, token, bot, fake_llm):
    fake_llm.responder = lambda request: Reply(text=f"echo: {request.last_user}", token_delay=0.001)
    client = openai.OpenAI(base_url=f"{stack['base']}/v1", api_key=token, max_retries=0, timeout=60)
    assert [m.id for m in client.models.list().data] == [bot]

    first = client.chat.completions.with_raw_response.create(model=bot, messages=[{"role": "user", "content": "hello"}])
    assert first.parse().choices[0].message.content == "echo: hello", stack["worker"].output()
    key = first.headers["X-Skein-Thread"]
    chunks = list(
        client.chat.completions.create(
            model=bot,
            messages=[{"role": "user", "content": "and you"}],
            stream=True,
            extra_headers={"X-Skein-Thread": key},
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "echo: and you"
    assert fake_llm.requests[-1].messages[1:] == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "echo: hello"},
        {"role": "user", "content": "and you"},
    ]
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{stack['base']}/v1", api_key="wrong", max_retries=0).models.list()

    scraped = httpx.get(f"{stack['base']}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=60)
    assert scraped.status_code == 200
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(scraped.text) for s in f.samples}
    # counted in the worker process, read from daphne's
    assert samples[("skein_turns_total", (("status", "succeeded"),))] == 2
    assert samples[("skein_turn_duration_seconds_count", ())] == 2
    assert samples[("skein_model_tokens_total", (("direction", "input"),))] == 22
    assert httpx.get(f"{stack['base']}/metrics", timeout=60).status_code == 401


def test_a_failed_turn_is_an_openai_error_after_a_wait_without_a_thread(stack, token, bot, fake_llm):
    """Under daphne a non-streamed completion waits deferred (runs/api/deferred.py): a turn whose model
    fails still answers in OpenAI's shape, with the thread and run headers, and says not to retry."""
    fake_llm.responder = lambda request: Reply(status=400, text="the fake provider refuses")
    client = openai.OpenAI(base_url=f"{stack['base']}/v1", api_key=token, max_retries=0, timeout=60)
    with pytest.raises(openai.APIStatusError) as raised:
        client.chat.completions.create(model=bot, messages=[{"role": "user", "content": "refused"}])
    error = raised.value
    assert error.status_code == 502
    assert error.body["code"] == "run_failed" and "the fake provider refuses" in error.body["message"]
    assert error.response.headers["x-should-retry"] == "false"
    assert error.response.headers["X-Skein-Thread"] and error.response.headers["X-Skein-Run"].isdigit()
