"""Bad input and abuse: broken graphs, odd text, wrong content types, login floods, secrets in logs."""

from __future__ import annotations

import logging

import pytest
from django.core.cache import cache
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from engine.graph import GraphShapeError
from engine.validation import validate
from tests.fakellm import Reply
from tests.graphs import chat_graph

NODE_TYPES = [
    "trigger.chat",
    "llm",
    "router.llm",
    "router.static",
    "template",
    "output",
    "memory.summary",
    "memory.window",
    "llm.model",
    "trigger.schedule",
    "nonsense",
    "",
]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)
ids = st.sampled_from(["a", "b", "c", "d", "e"]) | st.text(max_size=5)
nodes = st.fixed_dictionaries(
    {"id": ids, "type": st.sampled_from(NODE_TYPES)},
    optional={
        "data": st.dictionaries(
            st.sampled_from(["model", "routes", "template", "max_messages", "keep_last", "llm_source", "history", "x"]),
            json_values,
            max_size=4,
        )
        | json_values,
        "position": json_values,
    },
)
edges = st.fixed_dictionaries(
    {"source": ids, "target": ids},
    optional={
        "sourceHandle": st.sampled_from(["output", "memory", "llm", "messages", "x"]) | json_values,
        "targetHandle": st.sampled_from(["input", "memory", "llm", "set_history", "y"]) | json_values,
        "id": json_values,
    },
)
graphs = (
    st.fixed_dictionaries({"nodes": st.lists(nodes | json_values, max_size=6), "edges": st.lists(edges | json_values, max_size=6)})
    | json_values
)


@settings(max_examples=300, deadline=None)
@given(graph=graphs)
def test_validation_never_crashes_and_keys_every_issue(graph):
    try:
        issues = validate(graph)
    except GraphShapeError:
        return
    for found in issues:
        assert set(found) == {"node", "field", "message"} and isinstance(found["message"], str)
        assert found["node"] is None or isinstance(found["node"], str)


# transaction=True: the turns run for real (after their commit), as in the app, so a chat waits
# for its own run to end rather than for a commit that never comes.
@pytest.mark.django_db(transaction=True)
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(graph=graphs)
def test_broken_graphs_through_the_api_are_4xx_or_saved_drafts(api, graph):
    response = api.post("/api/workflows/", {"name": "fuzz", "graph": graph}, format="json")
    assert response.status_code in (201, 400), response.content
    if response.status_code == 201:
        workflow = response.json()
        publish = api.post(f"/api/workflows/{workflow['id']}/publish/")
        assert publish.status_code in (201, 400)
        chat = api.post(f"/api/workflows/{workflow['id']}/chat/", {"message": "hi"}, format="json")
        assert chat.status_code in (200, 400)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("text", ["héllo wörld", "emoji 🧶🧵", "rtl \u202etext", "zero\u200bwidth", "中文 日本語 한국어"])
def test_odd_unicode_round_trips(chatbot, chat, api, text):
    turn = chat(chatbot["id"], text)
    stored = api.get(f"/api/threads/{turn['thread']}/messages/").json()
    assert stored[0]["content"] == text and turn["reply"] == f"echo: {text}"


@pytest.mark.django_db
def test_a_nul_character_is_refused_clearly(api, chatbot):
    response = api.post(f"/api/workflows/{chatbot['id']}/chat/", {"message": "nul \x00 byte"}, format="json")
    assert response.status_code == 400 and "NUL characters" in str(response.json())


@pytest.mark.django_db(transaction=True)
def test_a_huge_prompt_gets_a_clear_error_from_the_model_not_a_crash(chatbot, chat, fake_llm):
    fake_llm.responder = lambda request: Reply(status=400, text="This model's maximum context length is 8192 tokens")
    turn = chat(chatbot["id"], "word " * 20_000)
    assert turn["status"] == "failed" and "maximum context length" in turn["error"]


@pytest.mark.django_db
def test_wrong_content_types_and_oversized_bodies(api, chatbot):
    url = f"/api/workflows/{chatbot['id']}/chat/"
    assert api.generic("POST", url, "message=hi", content_type="application/xml").status_code == 415
    assert api.generic("POST", url, b"\xff\xfe", content_type="application/json").status_code == 400
    from django.conf import settings as django_settings

    big = '{"message": "' + "x" * (django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 10) + '"}'
    assert api.generic("POST", url, big, content_type="application/json").status_code in (400, 413)


@pytest.mark.django_db
def test_login_attempts_are_rate_limited(user):
    cache.clear()
    client = APIClient()
    for _ in range(10):
        assert client.post("/api/auth/token/", {"username": "alice", "password": "wrong"}, format="json").status_code == 400
    locked = client.post("/api/auth/token/", {"username": "alice", "password": "alice-password"}, format="json")
    assert locked.status_code == 429 and "Retry-After" in locked.headers
    cache.clear()
    assert client.post("/api/auth/token/", {"username": "alice", "password": "alice-password"}, format="json").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_provider_keys_appear_in_no_answer_and_no_log(api, make_workflow, fake_llm, caplog):
    secret = "sk-test-SUPERSECRET-0123456789"
    provider = api.post(
        "/api/providers/", {"name": "p", "kind": "openai_compatible", "api_base": fake_llm.base_url, "api_key": secret}, format="json"
    ).json()
    workflow = make_workflow(chat_graph(provider["id"]))
    fake_llm.responder = lambda request: Reply(status=401, text="Incorrect API key provided")
    caplog.set_level(logging.DEBUG)
    answers = [
        api.post(f"/api/workflows/{workflow['id']}/chat/", {"message": "hi"}, format="json").content,
        api.get("/api/providers/").content,
        api.get(f"/api/providers/{provider['id']}/").content,
        api.get("/api/runs/").content,
    ]
    for answer in answers:
        assert secret.encode() not in answer
    assert secret not in caplog.text


# --- deep nesting and oversized graphs (issue 14, items 8 and 9) ----------------------------------
def _nested(depth: int, opener: str) -> str:
    closer = {"[": "]", "{": "}"}[opener]
    inner = '{"a": ' * depth + "1" + "}" * depth if opener == "{" else opener * depth + closer * depth
    return '{"name": "n", "message": "m", "username": "u", "password": "p", "graph": ' + inner + "}"


@pytest.mark.django_db
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(depth=st.integers(min_value=65, max_value=20_000), opener=st.sampled_from(["[", "{"]))
def test_deeply_nested_bodies_are_a_400_never_a_500(api, chatbot, depth, opener):
    cache.clear()
    body = _nested(depth, opener)
    for client, path in (
        (APIClient(), "/api/auth/token/"),
        (APIClient(), "/api/auth/login/"),
        (api, "/api/workflows/"),
        (api, f"/api/workflows/{chatbot['id']}/chat/"),
        (api, "/api/providers/"),
    ):
        response = client.generic("POST", path, body, content_type="application/json")
        assert response.status_code == 400 and "nested deeper" in response.json()["detail"], (path, response.status_code)


@pytest.mark.django_db
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(extra=st.integers(min_value=1, max_value=3000), what=st.sampled_from(["nodes", "edges"]))
def test_oversized_graphs_are_a_400(api, extra, what):
    from django.conf import settings as django_settings

    cap = django_settings.SKEIN_MAX_GRAPH_NODES if what == "nodes" else django_settings.SKEIN_MAX_GRAPH_EDGES
    items = [{"id": f"n{i}", "type": "output"} if what == "nodes" else {"source": "a", "target": "b"} for i in range(cap + extra)]
    graph = {"nodes": items if what == "nodes" else [], "edges": items if what == "edges" else []}
    response = api.post("/api/workflows/", {"name": "big", "graph": graph}, format="json")
    assert response.status_code == 400 and f"at most {cap} {what}" in str(response.json())
