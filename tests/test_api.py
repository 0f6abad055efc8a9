"""The REST API of docs/api.md#http-and-websocket-api: workflows, revisions, publishing, providers, auth, errors."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from providers.models import Provider
from tests.graphs import chat_graph, edge, node

pytestmark = pytest.mark.django_db(transaction=True)


def test_token_auth(user):
    client = APIClient()
    assert client.get("/api/workflows/").status_code in (401, 403)
    bad = client.post("/api/auth/token/", {"username": "alice", "password": "nope"}, format="json")
    assert bad.status_code == 400 and "wrong username or password" in str(bad.json())
    token = client.post("/api/auth/token/", {"username": "alice", "password": "alice-password"}, format="json").json()["token"]
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/workflows/").status_code == 200


def test_session_login_and_csrf(user):
    client = APIClient(enforce_csrf_checks=True)
    csrf = client.get("/api/auth/csrf/").json()["csrftoken"]
    assert client.post("/api/auth/login/", {"username": "alice", "password": "alice-password"}, format="json").status_code == 403
    response = client.post("/api/auth/login/", {"username": "alice", "password": "alice-password"}, format="json", HTTP_X_CSRFTOKEN=csrf)
    assert response.status_code == 200 and response.json()["username"] == "alice"
    assert client.get("/api/auth/me/").json()["username"] == "alice"
    csrf = client.cookies["csrftoken"].value
    # a session-authenticated write without the CSRF header is refused
    assert client.post("/api/workflows/", {"name": "x"}, format="json").status_code == 403
    assert client.post("/api/workflows/", {"name": "x"}, format="json", HTTP_X_CSRFTOKEN=csrf).status_code == 201


def test_node_types_serve_the_registry_with_schemas(api):
    types = {t["type"]: t for t in api.get("/api/node-types/").json()}
    llm = types["llm"]
    assert {p["name"]: p["kind"] for p in llm["inputs"]} == {"input": "flow", "memory": "memory", "tools": "tool"}
    assert set(llm["params_schema"]["properties"]) >= {"model", "provider", "system_prompt", "temperature", "max_tokens"}
    assert types["router.llm"]["dynamic_outputs"] == "routes"
    assert {p["name"]: p["kind"] for p in types["memory.summary"]["inputs"]} == {"set_history": "flow", "llm": "llm"}
    assert types["trigger.chat"]["is_trigger"] is True


def test_create_returns_errors_for_an_invalid_draft(api):
    graph = {"nodes": [node("l", "llm", temperature=9), node("x", "mystery")], "edges": [edge("l", "nowhere")]}
    response = api.post("/api/workflows/", {"name": "draft", "graph": graph}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["revision"] == 1
    keyed = {(e["node"], e["field"]) for e in body["errors"]}
    assert ("l", "temperature") in keyed and ("x", "type") in keyed and ("l", "edges") in keyed
    assert any(e["node"] is None for e in body["errors"])  # no trigger


@pytest.mark.parametrize("graph", [[], "text", 5, {"nodes": "x"}, {"nodes": [], "edges": {}}])
def test_a_graph_that_is_not_a_graph_is_a_400(api, graph):
    response = api.post("/api/workflows/", {"name": "bad", "graph": graph}, format="json")
    assert response.status_code == 400
    assert "graph" in response.json()


def test_malformed_json_and_wrong_types_are_400(api):
    assert api.post("/api/workflows/", "{not json", content_type="application/json").status_code == 400
    assert api.post("/api/workflows/", {"name": ["a"]}, format="json").status_code == 400
    assert api.post("/api/workflows/", {"graph": {}}, format="json").status_code == 400


def test_revision_check_gives_409_and_never_overwrites(api, provider):
    created = api.post("/api/workflows/", {"name": "w", "graph": chat_graph(provider.pk)}, format="json").json()
    url = f"/api/workflows/{created['id']}/"
    first = api.patch(url, {"name": "first edit", "revision": 1}, format="json")
    assert first.status_code == 200 and first.json()["revision"] == 2
    stale = api.patch(url, {"name": "stale edit", "revision": 1}, format="json")
    assert stale.status_code == 409 and stale.json()["revision"] == 2
    assert api.get(url).json()["name"] == "first edit"
    assert api.patch(url, {"name": "no revision"}, format="json").status_code == 400
    put = api.put(url, {"name": "put", "graph": {"nodes": [], "edges": []}, "revision": 2}, format="json")
    assert put.status_code == 200 and put.json()["graph"] == {"nodes": [], "edges": []}
    assert api.put(url, {"name": "put", "revision": 3}, format="json").status_code == 400  # PUT needs the graph


def test_publish_snapshots_the_graph(api, provider):
    created = api.post("/api/workflows/", {"name": "w", "graph": chat_graph(provider.pk)}, format="json").json()
    response = api.post(f"/api/workflows/{created['id']}/publish/")
    assert response.status_code == 201 and response.json() == {"version": 1}
    api.patch(f"/api/workflows/{created['id']}/", {"graph": {"nodes": [], "edges": []}, "revision": 1}, format="json")
    invalid = api.post(f"/api/workflows/{created['id']}/publish/")
    assert invalid.status_code == 400 and invalid.json()["errors"]
    detail = api.get(f"/api/workflows/{created['id']}/").json()
    assert detail["published_version"] == 1
    assert detail["triggers"] == [{"node": "chat", "type": "trigger.chat"}]
    from workflows.models import WorkflowVersion

    assert WorkflowVersion.objects.get(workflow_id=created["id"], number=1).graph == chat_graph(provider.pk)


def test_the_list_of_published_workflows_is_what_a_workflow_tool_can_call(api, provider):
    """``?published=true`` (the editor's picker of a tool.workflow node) leaves out the drafts."""
    published = api.post("/api/workflows/", {"name": "published", "graph": chat_graph(provider.pk)}, format="json").json()
    api.post(f"/api/workflows/{published['id']}/publish/")
    api.post("/api/workflows/", {"name": "draft only", "graph": chat_graph(provider.pk)}, format="json")

    listed = api.get("/api/workflows/?published=true").json()
    assert [(w["name"], w["published_version"]) for w in listed["results"]] == [("published", 1)]
    assert listed["count"] == 1
    assert {w["name"] for w in api.get("/api/workflows/").json()["results"]} == {"published", "draft only"}
    refused = api.get("/api/workflows/?published=maybe")
    assert refused.status_code == 400 and "published" in refused.json()


def test_unknown_provider_is_a_validation_error(api):
    body = api.post("/api/workflows/", {"name": "w", "graph": chat_graph(999999)}, format="json").json()
    assert {"node": "agent", "field": "provider", "message": "provider 999999 does not exist"} in body["errors"]


def test_provider_key_is_encrypted_and_never_returned(api, user):
    response = api.post("/api/providers/", {"name": "openai", "kind": "openai", "api_key": "sk-secret-123456"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert "api_key" not in body and body["has_api_key"] is True
    assert "sk-secret-123456" not in str(api.get("/api/providers/").json())
    stored = Provider.objects.get(pk=body["id"])
    assert "sk-secret" not in stored.api_key_encrypted and stored.api_key == "sk-secret-123456"
    assert api.post("/api/providers/", {"name": "x", "kind": "martian"}, format="json").status_code == 400


def test_another_users_objects_answer_404(api, other_api, chatbot, chat):
    turn = chat(chatbot["id"], "hello")
    wid = chatbot["id"]
    provider_id = chatbot["graph"]["nodes"][1]["data"]["provider"]
    for method, url in [
        ("get", f"/api/workflows/{wid}/"),
        ("patch", f"/api/workflows/{wid}/"),
        ("delete", f"/api/workflows/{wid}/"),
        ("post", f"/api/workflows/{wid}/publish/"),
        ("post", f"/api/workflows/{wid}/chat/"),
        ("get", f"/api/runs/{turn['run']}/"),
        ("get", f"/api/threads/{turn['thread']}/messages/"),
        ("get", f"/api/threads/{turn['thread']}/memory/"),
        ("get", f"/api/providers/{provider_id}/"),
        ("delete", f"/api/providers/{provider_id}/"),
    ]:
        response = getattr(other_api, method)(url, {"message": "x", "revision": 1}, format="json")
        assert response.status_code == 404, (method, url, response.status_code)
    assert other_api.get("/api/workflows/").json()["count"] == 0
    assert other_api.get("/api/runs/").json()["count"] == 0
    assert other_api.get("/api/providers/").json() == []
    # nor can they use the owner's provider in their own workflow
    body = other_api.post("/api/workflows/", {"name": "steal", "graph": chat_graph(provider_id)}, format="json").json()
    assert any(e["field"] == "provider" for e in body["errors"])
    # and the owner still has everything
    assert api.get(f"/api/workflows/{wid}/").status_code == 200


def test_another_users_thread_cannot_be_continued(api, other_api, chatbot, chat, make_workflow, provider):
    turn = chat(chatbot["id"], "hello")
    mine = make_workflow(chat_graph(provider.pk), name="second")
    # a thread of one workflow cannot be used with another either
    assert api.post(f"/api/workflows/{mine['id']}/chat/", {"message": "x", "thread": turn["thread"]}, format="json").status_code == 404


def test_openapi_schema_and_docs(api):
    schema = api.get("/api/schema/")
    assert schema.status_code == 200
    text = schema.content.decode()
    for path in ("/api/workflows/{id}/chat/", "/api/runs/{id}/", "/api/threads/{id}/memory/", "/api/node-types/"):
        assert path in text
    assert api.get("/api/docs/").status_code == 200


def test_runs_list_filters_and_paginates(api, chatbot, chat):
    first = chat(chatbot["id"], "one")
    chat(chatbot["id"], "two", thread=first["thread"])
    listing = api.get("/api/runs/", {"workflow": chatbot["id"], "limit": 1}).json()
    assert listing["count"] == 2 and len(listing["results"]) == 1 and listing["next"]
    assert api.get("/api/runs/", {"status": "failed"}).json()["count"] == 0
    assert api.get("/api/runs/", {"thread": first["thread"], "trigger": "chat"}).json()["count"] == 2
    assert api.get("/api/runs/", {"status": "exploded"}).status_code == 400


def test_the_front_ends_node_types_fixture_is_the_registry(api):
    """The editor's unit tests draw nodes from a stored copy of ``GET /api/node-types/``: it must be
    what the API serves, or they test an editor for node types that no longer exist."""
    import json

    from tests.import_cycles import ROOT

    stored = json.loads((ROOT / "frontend/src/test/nodeTypes.fixture.json").read_text())
    assert api.get("/api/node-types/").json() == stored, (
        "frontend/src/test/nodeTypes.fixture.json is behind the registry: write GET /api/node-types/ there (json, indent 1)"
    )
