"""The layers hold: no import circle in ``workflows`` and ``memory`` (every import counts, see
tests/import_cycles.py), and lists cost the same number of queries however long they are."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.graphs import chat_graph
from tests.import_cycles import cycles, import_graph


def test_no_import_cycles_in_workflows_and_memory():
    assert cycles(import_graph()) == []


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


def test_the_engine_imports_no_workflows_module_outside_it():
    graph = import_graph()
    outside = {
        (module, imported)
        for module, imports in graph.items()
        if module.startswith("workflows.engine")
        for imported in imports
        if not imported.startswith("workflows.engine")
    }
    assert outside == set()


def test_the_app_config_registers_the_built_in_node_types_in_their_listed_order():
    from workflows.engine.registry import all_node_types
    from workflows.nodes import NODE_TYPES

    assert [type(node_type) for node_type in all_node_types()] == list(NODE_TYPES)


def test_a_reply_is_a_typed_field_and_the_run_step_records_it_as_before():
    from workflows.engine.registry import FlowValue, NodeResult
    from workflows.nodes.output import OutputNode

    result = OutputNode().run(None, {"input": [FlowValue("Hello", cut=True)]})
    assert (result.reply, result.reply_cut, result.output_text, result.outputs) == ("Hello", True, "Hello", {})
    assert result.step_details() == {"reply": "Hello", "cut": True}
    assert NodeResult(outputs={}, details={"route": "billing"}).step_details() == {"route": "billing"}
