"""Versions (list, diff, restore, pinning) and workflow files (export, import, the commands)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from runs.models import Run
from tests.graphs import chat_graph, edge, node
from workflows import files
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)  # turns run on commit


@pytest.fixture
def two_versions(api, make_workflow, provider):
    """Version 1: chat -> agent -> out. Version 2: the agent's prompt changed, a template node
    added between it and the output. The draft is version 2."""
    workflow = make_workflow(chat_graph(provider.pk, system_prompt="one"))
    assert api.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 201
    graph = chat_graph(provider.pk, system_prompt="two")
    graph["nodes"].append(node("fmt", "template", 300, 100, template="> {{ input }}"))
    graph["edges"] = [e for e in graph["edges"] if e["target"] != "out"] + [edge("agent", "fmt"), edge("fmt", "out")]
    saved = api.put(f"/api/workflows/{workflow['id']}/", {"graph": graph, "revision": workflow["revision"]}, format="json").json()
    assert api.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 201
    return {"id": workflow["id"], "v1": chat_graph(provider.pk, system_prompt="one"), "v2": graph, "revision": saved["revision"]}


def test_versions_list_who_published_what_and_when_newest_first(api, two_versions, user):
    listed = api.get(f"/api/workflows/{two_versions['id']}/versions/").json()
    assert [v["version"] for v in listed] == [2, 1]
    assert [v["live"] for v in listed] == [True, False]
    assert all(v["published_by"] == user.username and v["created"] for v in listed)
    assert listed[1]["graph"] == two_versions["v1"] and listed[0]["graph"] == two_versions["v2"]


def test_a_diff_names_what_was_added_removed_and_changed(api, two_versions):
    diff = api.get(f"/api/workflows/{two_versions['id']}/versions/diff/?from=1&to=2").json()
    assert diff["from"] == "1" and diff["to"] == "2"
    assert [n["id"] for n in diff["nodes"]["added"]] == ["fmt"] and diff["nodes"]["removed"] == []
    assert diff["nodes"]["changed"] == [{"id": "agent", "type": "llm", "params": {"system_prompt": {"from": "one", "to": "two"}}}]
    assert {(e["source"], e["target"]) for e in diff["edges"]["added"]} == {("agent", "fmt"), ("fmt", "out")}
    assert [(e["source"], e["target"]) for e in diff["edges"]["removed"]] == [("agent", "out")]
    # defaults: from the published version to the draft, which are the same
    same = api.get(f"/api/workflows/{two_versions['id']}/versions/diff/").json()
    assert same["from"] == "2" and same["to"] == "draft" and same["nodes"]["changed"] == [] and same["edges"]["added"] == []
    assert api.get(f"/api/workflows/{two_versions['id']}/versions/diff/?from=7").status_code == 404
    assert api.get(f"/api/workflows/{two_versions['id']}/versions/diff/?from=abc").status_code == 400


def test_restoring_a_version_makes_it_the_draft_as_a_new_revision(api, two_versions, chat, fake_llm):
    url = f"/api/workflows/{two_versions['id']}/versions/1/restore/"
    assert api.post(url, {"revision": two_versions["revision"] - 1}, format="json").status_code == 409  # stale: nothing changes
    restored = api.post(url, {"revision": two_versions["revision"]}, format="json")
    assert restored.status_code == 200, restored.content
    body = restored.json()
    assert body["graph"] == two_versions["v1"] and body["revision"] == two_versions["revision"] + 1
    assert body["published_version"] == 2  # restoring is a draft change: publish to go live
    chat(two_versions["id"], "hi")
    assert fake_llm.requests[-1].messages[0]["content"] == "one"
    assert api.post(f"/api/workflows/{two_versions['id']}/versions/9/restore/", {}, format="json").status_code == 404
    assert api.post(f"/api/workflows/{two_versions['id']}/versions/1/restore/", {"revision": "x"}, format="json").status_code == 400


def test_webhook_callers_may_pin_a_version(api, make_workflow, provider, fake_llm, client):
    graph = chat_graph(provider.pk, system_prompt="one")
    graph["nodes"].append(node("hook", "trigger.webhook"))
    graph["edges"].append(edge("hook", "agent"))
    workflow = make_workflow(graph)
    api.post(f"/api/workflows/{workflow['id']}/publish/")
    graph["nodes"][1]["data"]["system_prompt"] = "two"
    api.put(f"/api/workflows/{workflow['id']}/", {"graph": graph, "revision": workflow["revision"]}, format="json")
    api.post(f"/api/workflows/{workflow['id']}/publish/")
    hook = next(t for t in api.get(f"/api/workflows/{workflow['id']}/").json()["triggers"] if t["node"] == "hook")
    path = "/" + hook["webhook_url"].split("/", 3)[3]
    prompts = []
    for query, headers in (("?wait=1", {}), ("?wait=1&version=1", {}), ("?wait=1", {"HTTP_X_SKEIN_VERSION": "1"})):
        response = client.post(path + query, {"message": "hi"}, content_type="application/json", **headers)
        assert response.status_code == 200, response.content
        prompts.append(fake_llm.requests[-1].messages[0]["content"])
    assert prompts == ["two", "one", "one"]
    runs = Run.objects.count()
    assert client.post(path + "?version=5", {"message": "hi"}, content_type="application/json").status_code == 404
    assert client.post(path + "?version=x", {"message": "hi"}, content_type="application/json").status_code == 400
    assert Run.objects.count() == runs


# --- files ----------------------------------------------------------------------------------------
def test_an_export_has_no_secrets_and_no_database_ids(api, two_versions, provider):
    provider.api_key = "sk-very-secret"
    provider.save()
    response = api.get(f"/api/workflows/{two_versions['id']}/export/")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="test-workflow.skein.json"'
    exported = response.json()
    assert set(exported) == {"skein", "name", "graph"} and exported["skein"] == 1
    agent = next(n for n in exported["graph"]["nodes"] if n["id"] == "agent")
    assert agent["data"]["provider"] == {"name": "fake", "kind": "openai_compatible"}
    assert [n["id"] for n in exported["graph"]["nodes"]] == [n["id"] for n in two_versions["v2"]["nodes"]]
    text = json.dumps(exported)
    workflow = Workflow.objects.get(pk=two_versions["id"])
    for secret in ("sk-very-secret", workflow.public_key, provider.api_key_encrypted, "wh_", "whsec_"):
        assert secret not in text
    assert f'"provider": {provider.pk}' not in text


def test_an_import_maps_providers_by_name_and_kind_and_reports_the_rest(api, other_api, other_user, two_versions):
    from providers.services import provider_create

    exported = api.get(f"/api/workflows/{two_versions['id']}/export/").json()
    # mallory has no such provider: the node keeps its model, the provider is reported
    first = other_api.post("/api/workflows/import/", exported, format="json")
    assert first.status_code == 201, first.content
    assert first.json()["errors"][0] == {
        "node": "agent",
        "field": "provider",
        "message": "no provider named 'fake' of kind 'openai_compatible': add one on the Providers page, or pick one in this node",
    }
    assert "provider" not in next(n for n in first.json()["graph"]["nodes"] if n["id"] == "agent")["data"]
    # with one of that name and kind (and another kind of the same name), it is hers that is used
    provider_create(owner=other_user, name="fake", kind="openai", api_key="k")
    mine = provider_create(owner=other_user, name="fake", kind="openai_compatible", api_base="http://127.0.0.1:9/v1")
    second = other_api.post("/api/workflows/import/?name=Mine", exported, format="json").json()
    assert second["errors"] == [] and second["name"] == "Mine"
    assert next(n for n in second["graph"]["nodes"] if n["id"] == "agent")["data"]["provider"] == mine.pk
    assert Workflow.objects.get(pk=second["id"]).owner == other_user
    # the same file as a multipart upload (curl -F file=@bot.skein.json)
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = other_api.post(
        "/api/workflows/import/", {"file": SimpleUploadedFile("bot.skein.json", json.dumps(exported).encode())}, format="multipart"
    )
    assert upload.status_code == 201 and upload.json()["errors"] == [], upload.content
    assert other_api.post("/api/workflows/import/", {"note": "no file"}, format="multipart").status_code == 400
    huge = SimpleUploadedFile("huge.json", b" " * 700_000 + json.dumps(exported).encode())
    assert "larger than" in other_api.post("/api/workflows/import/", {"file": huge}, format="multipart").json()["detail"]


BAD_FILES = [
    ("not JSON", b"{nope", "not JSON"),
    ("a list", b"[1, 2]", "not a Skein workflow file"),
    ("no version", json.dumps({"name": "x", "graph": {"nodes": [], "edges": []}}).encode(), 'no "skein" format version'),
    (
        "a newer version",
        json.dumps({"skein": 2, "name": "x", "graph": {"nodes": [], "edges": []}}).encode(),
        "format version 2, newer than",
    ),
    (
        "an unknown version",
        json.dumps({"skein": "one", "name": "x", "graph": {"nodes": [], "edges": []}}).encode(),
        "unknown workflow file format version",
    ),
    ("no name", json.dumps({"skein": 1, "graph": {"nodes": [], "edges": []}}).encode(), '"name"'),
    ("a bad graph", json.dumps({"skein": 1, "name": "x", "graph": {"nodes": "many"}}).encode(), "graph is malformed"),
    (
        "an unknown node type",
        json.dumps({"skein": 1, "name": "x", "graph": {"nodes": [node("a", "magic.wand")], "edges": []}}).encode(),
        "unknown node types: 'magic.wand' (node a)",
    ),
    ("too big", json.dumps({"skein": 1, "name": "x", "graph": {"nodes": [], "edges": []}, "pad": "x" * 600_000}).encode(), "limited to"),
]


@pytest.mark.parametrize("name,body,message", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_a_bad_file_is_a_400_saying_why_and_creates_nothing(api, name, body, message):
    before = Workflow.objects.count()
    response = api.generic("POST", "/api/workflows/import/", body, content_type="application/json")
    assert response.status_code == 400, (name, response.status_code, response.content)
    assert message in response.json()["detail"], response.json()
    assert Workflow.objects.count() == before


def test_the_commands_keep_workflows_in_git_and_back(two_versions, user, tmp_path, provider):
    out = io.StringIO()
    call_command("skein_export", str(two_versions["id"]), stdout=out)
    text = out.getvalue()
    assert json.loads(text) == files.workflow_export(workflow=Workflow.objects.get(pk=two_versions["id"]))
    assert text.endswith("}\n") and text == files.file_dumps(json.loads(text))  # stable for diffs
    path = tmp_path / "bot.skein.json"
    call_command("skein_export", str(two_versions["id"]), "--output", str(path), stderr=io.StringIO())
    assert path.read_text() == text
    # edited in Git, imported as a new workflow, then into the same one as a new draft, published
    data = json.loads(text)
    data["name"] = "from git"
    path.write_text(json.dumps(data))
    out = io.StringIO()
    call_command("skein_import", str(path), "--user", user.username, stdout=out, stderr=io.StringIO())
    created = Workflow.objects.get(name="from git")
    assert "created workflow" in out.getvalue() and created.graph == Workflow.objects.get(pk=two_versions["id"]).graph
    data["graph"]["nodes"][1]["data"]["system_prompt"] = "three"
    path.write_text(json.dumps(data))
    call_command(
        "skein_import",
        str(path),
        "--user",
        user.username,
        "--into",
        str(created.pk),
        "--publish",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    created.refresh_from_db()
    assert created.revision == 2 and created.published_version.number == 1
    assert created.published_version.graph["nodes"][1]["data"]["system_prompt"] == "three"
    # a file it cannot read, or a user that does not exist: an error, nothing created
    path.write_text(json.dumps({**data, "skein": 3}))
    count = Workflow.objects.count()
    with pytest.raises(CommandError, match="format version 3"):
        call_command("skein_import", str(path), "--user", user.username)
    with pytest.raises(CommandError, match="no user"):
        call_command("skein_import", str(path), "--user", "nobody")
    with pytest.raises(CommandError, match="no workflow 999"):
        call_command("skein_export", "999")
    assert Workflow.objects.count() == count
