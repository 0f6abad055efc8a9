"""The layers hold: the import-linter contracts name every package of Skein (``lint-imports``, run by
``make lint``, checks them), no import circle among them (every import counts, see
tests/import_cycles.py), and lists cost the same number of queries however long they are."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.graphs import chat_graph
from tests.import_cycles import PACKAGES, ROOT, cycles, import_graph


def test_no_import_cycles_among_skeins_packages():
    assert cycles(import_graph()) == []


def test_the_layers_contract_names_every_package_once():
    """A package the layers leave out would be checked by nothing."""
    import tomllib

    linter = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    [layers] = [c["layers"] for c in linter["contracts"] if c["type"] == "layers"]
    layered = [name.strip() for layer in layers for name in layer.replace("|", ":").split(":")]
    packages = {path.parent.name for path in ROOT.glob("*/__init__.py")} - {"tests", "bench"}
    assert sorted(layered) == sorted(set(layered)), "a package stands in two layers"
    assert set(layered) == set(PACKAGES) == packages


def _list_queries(api) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = api.get("/api/workflows/?limit=100")
    assert response.status_code == 200
    return len(captured.captured_queries), response.json()["count"]


@pytest.mark.django_db
def test_the_workflow_list_costs_the_same_queries_for_one_or_fifty_workflows(api, user, provider):
    from workflows import services

    def add(count: int) -> None:
        for index in range(count):
            workflow = services.workflow_create(owner=user, name=f"bot {index}", graph=chat_graph(provider.pk))
            if index % 2 == 0:  # published ones have a version, a webhook-free trigger set, a draft
                services.workflow_publish(workflow=workflow)

    add(1)
    one, listed = _list_queries(api)
    assert listed == 1
    add(49)
    fifty, listed = _list_queries(api)
    assert listed == 50
    print(f"GET /api/workflows/ queries: 1 workflow {one}, 50 workflows {fifty}")
    assert fifty == one, (one, fifty)


def test_the_engine_imports_nothing_of_skein_outside_it():
    graph = import_graph()
    outside = {
        (module, imported)
        for module, imports in graph.items()
        if module.split(".")[0] == "engine"
        for imported in imports
        if imported.split(".")[0] != "engine"
    }
    assert outside == set()


def test_the_app_config_registers_the_built_in_node_types_in_their_listed_order():
    from engine.registry import all_node_types
    from workflows.nodes import NODE_TYPES

    assert [type(node_type) for node_type in all_node_types()] == list(NODE_TYPES)


def test_a_reply_is_a_typed_field_and_the_run_step_records_it_as_before():
    from engine.registry import FlowValue, NodeResult
    from workflows.nodes.output import OutputNode

    result = OutputNode().run(None, {"input": [FlowValue("Hello", cut=True)]})
    assert (result.reply, result.reply_cut, result.output_text, result.outputs) == ("Hello", True, "Hello", {})
    assert result.step_details() == {"reply": "Hello", "cut": True}
    assert NodeResult(outputs={}, details={"route": "billing"}).step_details() == {"route": "billing"}
