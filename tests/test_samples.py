"""The sample library (workflows/samples.py): the demos, the templates and the tests' graphs are
one set of graphs; every one passes the save-time analysis; the templates are served to the
workflow list on the caller's default model (GET /api/templates/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from demo.seed import demo_graphs
from providers.services import provider_create
from tests.graphs import chat_graph
from workflows import samples
from workflows.analysis import graph_issues

FRONTEND_FIXTURE = Path(__file__).resolve().parent.parent / "frontend/src/test/templates.fixture.json"
# The default model the front end's fixture is served on (frontend/src/test/fixtures.ts).
FIXTURE_MODEL = {"provider": 5, "model": "smollm2"}


def every_sample(provider_id: int, lookup_workflow: int = 1) -> list[tuple[str, dict]]:
    ref = {"model": "agent-model", "provider": provider_id}
    return [
        *demo_graphs(provider=provider_id, model="agent-model", lookup_workflow=lookup_workflow),
        *((f"template {t['key']}", t["graph"]) for t in samples.templates(ref) if t["key"] != "blank"),
        ("tests' chatbot", chat_graph(provider_id)),
        ("tests' chatbot with memory", chat_graph(provider_id, memory={"type": "memory.window", "max_messages": 4})),
        (
            "tests' summarizing chatbot",
            chat_graph(
                provider_id,
                memory={"type": "memory.summary", "llm_source": "external"},
                summarizer={"model": "cheap-model", "provider": provider_id},
            ),
        ),
    ]


@pytest.mark.django_db
def test_every_sample_passes_the_save_time_analysis(user, provider):
    from workflows.services import workflow_create, workflow_publish

    lookup = workflow_create(owner=user, name=samples.ORDER_LOOKUP, graph=samples.order_lookup())
    workflow_publish(workflow=lookup)  # the order desk calls it: a published workflow of the same owner
    for name, graph in every_sample(provider.pk, lookup_workflow=lookup.pk):
        assert graph_issues(graph=graph, owner=user) == [], name


def test_every_sample_has_the_editors_edge_ids():
    """One edge-id format, the editor's (``edgeId`` in frontend/src/editor/store.ts; the front end's
    fixture test checks the served ids against that function itself)."""
    for name, graph in every_sample(1):
        ids = [e["id"] for e in graph["edges"]]
        assert len(set(ids)) == len(ids), name
        for edge in graph["edges"]:
            assert edge["id"] == f"e_{edge['source']}.{edge['sourceHandle']}-{edge['target']}.{edge['targetHandle']}", name


def test_the_templates_put_the_model_on_every_node_that_calls_one_and_nowhere_else():
    from engine.registry import get_node_type

    ref = {"model": "m", "provider": 3}
    calls_model = {"llm", "llm.model", "router.llm"}
    for template in samples.templates(ref):
        for node in template["graph"]["nodes"]:
            assert get_node_type(node["type"]) is not None, node["type"]
            if node["type"] in calls_model:
                assert {k: node["data"][k] for k in ref} == ref, (template["key"], node["id"])
            else:
                assert "model" not in node["data"], (template["key"], node["id"])
    assert [t["key"] for t in samples.templates({})] == ["blank", "chatbot", "summary", "router"]


def test_the_front_ends_fixture_is_the_library():
    served = samples.templates(FIXTURE_MODEL)
    assert json.loads(FRONTEND_FIXTURE.read_text()) == served, (
        "frontend/src/test/templates.fixture.json is behind workflows/samples.py; rewrite it with\n"
        "  .venv/bin/python -c 'import json; from workflows.samples import templates; "
        f"print(json.dumps(templates({FIXTURE_MODEL!r}), indent=2, ensure_ascii=False))' > {FRONTEND_FIXTURE}"
    )


# --- GET /api/templates/ ---------------------------------------------------------------------------------
@pytest.mark.django_db
def test_the_templates_need_a_login():
    assert APIClient().get("/api/templates/").status_code in (401, 403)


@pytest.mark.django_db
def test_the_templates_are_served_on_the_callers_default_model(api, provider):
    default = api.get("/api/providers/default/").json()
    assert default["provider"] == provider.pk  # the caller's provider that answers
    response = api.get("/api/templates/")
    assert response.status_code == 200
    body = response.json()
    assert [set(t) for t in body] == [{"key", "name", "description", "graph"}] * len(body)
    assert body == samples.templates({"provider": default["provider"], "model": default["model"]})
    router = next(t for t in body if t["key"] == "router")["graph"]
    models = [(n["data"]["provider"], n["data"]["model"]) for n in router["nodes"] if n["type"] in ("llm", "router.llm")]
    assert models == [(provider.pk, default["model"])] * 3


@pytest.mark.django_db
def test_another_users_templates_never_name_my_provider(api, other_api, provider, other_user):
    theirs = provider_create(owner=other_user, name="theirs", kind="local")
    nodes = [n for t in other_api.get("/api/templates/").json() for n in t["graph"]["nodes"] if "provider" in n["data"]]
    assert nodes and {n["data"]["provider"] for n in nodes} <= {None, theirs.pk}
