"""memory.facts and participant-keyed memory in the full mode: daphne, a Celery worker, Redis and
PostgreSQL. The test process talks HTTP to daphne only; the worker runs each turn and its fact
extraction against the fake model server."""

from __future__ import annotations

import pytest

from memory import facts as fact_rules
from tests.fakellm import Reply
from tests.graphs import chat_graph, edge, node
from tests.test_participants import extracting_responder, is_extraction

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

BOUND_S = 3


@pytest.fixture(scope="module")
def stack(require_postgres, require_redis, tmp_path_factory, django_db_setup, django_db_blocker):
    from django.db import connection

    from tests.stack import full_stack

    with django_db_blocker.unblock():
        name = connection.settings_dict["NAME"]
    with full_stack(
        name, require_redis, tmp_path_factory.mktemp("fullstack-participants"), concurrency=4, SKEIN_SUMMARY_TIMEOUT_S=BOUND_S
    ) as running:
        yield running


@pytest.fixture
def client(stack, user):
    from tests.stack import logged_in_client

    with logged_in_client(stack["base"]) as http:
        yield http


@pytest.fixture
def facts_workflow(client, fake_llm):
    provider = client.post(
        "/api/providers/", json={"name": "fake", "kind": "openai_compatible", "api_base": fake_llm.base_url, "api_key": "k"}
    ).json()
    graph = chat_graph(provider["id"], memory={"type": "memory.buffer", "key": "participant"})
    graph["nodes"] += [
        node("facts", "memory.facts", 0, 200, llm_source="external"),
        node("cheap", "llm.model", 0, 400, model="cheap-model", provider=provider["id"], temperature=0),
    ]
    graph["edges"] += [edge("facts", "agent", "memory", "memory"), edge("cheap", "facts", "llm", "llm")]
    workflow = client.post("/api/workflows/", json={"name": "facts", "graph": graph}).json()
    assert workflow["errors"] == []
    return workflow


def chat(client, workflow, message, participant):
    response = client.post(f"/api/workflows/{workflow['id']}/chat/", json={"message": message, "participant": participant})
    assert response.status_code == 200, response.text
    return response.json()


def test_facts_are_extracted_on_the_worker_and_follow_the_participant(client, facts_workflow, fake_llm, stack):
    fake_llm.responder = extracting_responder
    first = chat(client, facts_workflow, "I live in Lisbon", "ana")
    assert first["status"] == "succeeded" and first["warnings"] == [], stack["worker"].output()
    moved = chat(client, facts_workflow, "I moved from Lisbon to Porto", "ana")
    assert moved["thread"] != first["thread"]
    third = chat(client, facts_workflow, "where do I live?", "ana")
    agent = [r for r in fake_llm.requests_for("agent-model")]
    assert {"role": "system", "content": fact_rules.FACTS_PREFIX + "- city: Porto"} in agent[-1].messages
    assert {"role": "user", "content": "I live in Lisbon"} in agent[-1].messages  # the participant's history, from thread 1

    extraction = client.get(f"/api/runs/{moved['run']}/").json()["extractions"][0]
    assert extraction["status"] == "ok" and extraction["model"] == "cheap-model" and extraction["updated"] == 1
    assert extraction["messages"] == [r for r in fake_llm.requests_for("cheap-model") if is_extraction(r)][1].messages
    participant = client.get(f"/api/runs/{third['run']}/").json()["participant"]
    facts = client.get(f"/api/participants/{participant}/facts/").json()
    assert [(f["value"], f["current"], f["source_message"]) for f in facts] == [
        ("Porto", True, "I moved from Lisbon to Porto"),
        ("Lisbon", False, "I live in Lisbon"),
    ]
    assert "run_turn" in stack["worker"].output()


def test_a_hung_extraction_on_the_worker_is_ended_at_its_bound(client, facts_workflow, fake_llm):
    def responder(request):
        if is_extraction(request):
            return Reply(text='{"facts": []}', hang=60)
        return Reply(text=f"echo: {request.last_user}")

    fake_llm.responder = responder
    turn = chat(client, facts_workflow, "I live in Lisbon", "bruno")
    assert turn["status"] == "succeeded" and turn["reply"] == "echo: I live in Lisbon"
    assert turn["warnings"] == [
        {
            "node": "facts",
            "message": f"fact extraction failed (the fact extraction did not answer within {BOUND_S}s); the facts stay as they were",
        }
    ]
    extraction = client.get(f"/api/runs/{turn['run']}/").json()["extractions"][0]
    assert extraction["status"] == "failed" and extraction["duration_ms"] < (BOUND_S + 2) * 1000


def test_one_participants_threads_at_once_lose_and_duplicate_nothing(client, fake_llm):
    """Turns of one participant on several threads run side by side on the worker: each adds to the
    participant's history under its row lock, so every message is there once."""
    import concurrent.futures

    from memory.models import History

    fake_llm.responder = lambda request: Reply(text=f"echo: {request.last_user}", delay=0.3)
    provider = client.post(
        "/api/providers/", json={"name": "fake", "kind": "openai_compatible", "api_base": fake_llm.base_url, "api_key": "k"}
    ).json()
    graph = chat_graph(provider["id"], memory={"type": "memory.window", "key": "participant", "max_messages": 4})
    workflow = client.post("/api/workflows/", json={"name": "parallel", "graph": graph}).json()

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        turns = list(pool.map(lambda i: chat(client, workflow, f"message {i}", "busy-person"), range(6)))
    assert all(t["status"] == "succeeded" for t in turns) and len({t["thread"] for t in turns}) == 6
    history = History.objects.get(key__startswith="participant:", kind="global")
    rows = list(history.messages.order_by("seq").values_list("seq", "content"))
    assert [seq for seq, _ in rows] == list(range(1, 13))
    assert sorted(c for _, c in rows if c.startswith("message")) == [f"message {i}" for i in range(6)]
    assert sorted(c for _, c in rows if c.startswith("echo")) == [f"echo: message {i}" for i in range(6)]
