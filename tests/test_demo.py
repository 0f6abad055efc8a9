"""First run (issue 7): skein_bootstrap creates the account, its local provider and demo workflows,
idempotently; every demo validates, is laid out for the editor, and runs (on the fake server)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings

from demo.seed import LOCAL_MODEL, demo_graphs
from providers.models import Provider
from runs import services as runs
from runs import turns
from runs.models import Run
from tests.fakellm import Reply
from workflows import analysis, services
from workflows.models import Workflow
from workflows.samples import ORDER_DESK, ORDER_LOOKUP

DEMO_COUNT = 8


def bootstrap(*args) -> str:
    out = StringIO()
    call_command("skein_bootstrap", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_first_run_creates_account_local_provider_and_demos(django_user_model):
    output = bootstrap()
    account = django_user_model.objects.get(username="demo")
    assert account.check_password("demo")
    assert "http://127.0.0.1:8000/" in output and "demo / demo" in output

    [provider] = Provider.objects.filter(owner=account)
    assert provider.kind == "local" and not provider.has_api_key

    workflows = Workflow.objects.filter(owner=account)
    assert workflows.count() == DEMO_COUNT
    types = {n["type"] for w in workflows for n in w.graph["nodes"]}
    assert {"memory.buffer", "memory.window", "memory.summary", "router.static", "trigger.webhook", "llm.model", "tool.workflow"} <= types
    for workflow in workflows:
        assert analysis.graph_issues(graph=workflow.graph, owner=account) == [], workflow.name
        assert workflow.published_version is not None, workflow.name
        assert workflow.versions.filter(number__isnull=False).count() == 1, workflow.name  # published once
        models = [n["data"] for n in workflow.graph["nodes"] if "model" in n["data"]]
        assert models or workflow.name == ORDER_LOOKUP, workflow.name  # the order lookup is a table, no model
        assert all(m["provider"] == provider.pk and m["model"] == LOCAL_MODEL for m in models)
    desk = workflows.get(name=ORDER_DESK)
    [tool] = [n for n in desk.graph["nodes"] if n["type"] == "tool.workflow"]
    assert tool["data"]["workflow"] == workflows.get(name=ORDER_LOOKUP).pk


@pytest.mark.django_db
def test_rerunning_duplicates_nothing(django_user_model):
    bootstrap()
    output = bootstrap()
    assert "unless you changed it" in output
    assert django_user_model.objects.count() == 1
    assert Provider.objects.count() == 1 and Workflow.objects.count() == DEMO_COUNT

    # a deleted demo stays deleted, unless asked for again
    Workflow.objects.filter(name__in=["Demo: webhook", ORDER_DESK]).delete()
    bootstrap()
    assert Workflow.objects.count() == DEMO_COUNT - 2
    bootstrap("--demos")
    assert Workflow.objects.count() == DEMO_COUNT and Provider.objects.count() == 1
    desk = Workflow.objects.get(name=ORDER_DESK)
    assert analysis.graph_issues(graph=desk.graph, owner=desk.owner) == []


@pytest.mark.django_db
def test_an_existing_account_gets_the_provider_and_demos(django_user_model):
    django_user_model.objects.create_user("first", password="pw")
    output = bootstrap()
    assert "the account you created earlier" in output
    assert Provider.objects.get().owner.username == "first" and Workflow.objects.count() == DEMO_COUNT


@pytest.mark.django_db
def test_providers_configured_in_the_environment_are_added(django_user_model):
    env = [{"name": "OpenAI (key from environment)", "kind": "openai", "api_base": ""}]
    with override_settings(SKEIN_ENV_PROVIDERS=env):
        bootstrap()
        bootstrap()
    assert sorted(Provider.objects.values_list("kind", flat=True)) == ["local", "openai"]
    assert not Provider.objects.get(kind="openai").has_api_key  # the key stays in the environment


def test_demo_layout_is_readable():
    """Every node has its own place; flow runs left to right; resources sit below their consumer."""
    for name, graph in demo_graphs(provider=1, lookup_workflow=7):
        positions = [(n["position"]["x"], n["position"]["y"]) for n in graph["nodes"]]
        assert len(set(positions)) == len(positions), name
        where = {n["id"]: n["position"] for n in graph["nodes"]}
        for edge in graph["edges"]:
            source, target = where[edge["source"]], where[edge["target"]]
            if edge["targetHandle"] in ("memory", "llm", "tools"):
                assert source["y"] > target["y"], (name, edge["id"])
            else:
                assert source["x"] < target["x"], (name, edge["id"])


@pytest.mark.django_db(transaction=True)
def test_every_demo_runs(make_workflow, chat, provider, fake_llm, api):
    """The demos' graphs, on the fake server: each chat demo answers, the router picks both ways."""
    graphs = dict(demo_graphs(provider=provider.pk, model="agent-model"))
    fake_llm.responder = lambda request: Reply(text=f"answer to: {request.last_user}")
    for name, graph in graphs.items():
        if name in ("Demo: webhook", "Demo: billing router", ORDER_LOOKUP):
            continue
        workflow = make_workflow(graph, name=name)
        thread = None
        for message in ("my name is Ada", "what is my name?"):
            turn = chat(workflow["id"], message, thread=thread)
            assert turn["status"] == "succeeded" and turn["reply"] == f"answer to: {message}", name
            thread = turn["thread"]
    # memory demos send the earlier turn; the plain chatbot does not
    plain, buffered = fake_llm.requests[1], fake_llm.requests[3]
    assert [m["content"] for m in plain.messages if m["role"] == "user"] == ["what is my name?"]
    assert [m["content"] for m in buffered.messages if m["role"] == "user"] == ["my name is Ada", "what is my name?"]

    router = make_workflow(graphs["Demo: billing router"], name="router")
    for message, branch in (("Why was I charged twice on my invoice?", "billing"), ("What's a good name for a cat?", "general")):
        run = api.get(f"/api/runs/{chat(router['id'], message)['run']}/").json()
        assert run["status"] == "succeeded" and run["output"] == f"answer to: {message}"
        ran = {s["node"] for s in run["steps"]}
        other = "general" if branch == "billing" else "billing"
        assert branch in ran and other not in ran, (message, ran)


@pytest.mark.django_db(transaction=True)
def test_the_webhook_demo_runs(make_workflow, provider, fake_llm, api):
    graph = dict(demo_graphs(provider=provider.pk, model="agent-model"))["Demo: webhook"]
    workflow = Workflow.objects.get(pk=make_workflow(graph, name="hook")["id"])
    version = services.workflow_publish(workflow=workflow)
    run = runs.run_create(version=version, trigger="webhook", input_text="order 42 shipped?", payload={"message": "order 42 shipped?"})
    turns.turn_process(run_id=run.pk)
    run = Run.objects.get(pk=run.pk)
    assert run.status == "succeeded" and run.output == "echo: order 42 shipped?"


def test_summary_demo_summarizes_with_the_attached_model():
    graph = dict(demo_graphs(provider=7))["Demo: summarizing chatbot (summary)"]
    memory = next(n for n in graph["nodes"] if n["type"] == "memory.summary")
    assert memory["data"]["llm_source"] == "external"
    assert any(e["source"] == "summarizer" and e["target"] == memory["id"] and e["targetHandle"] == "llm" for e in graph["edges"])
