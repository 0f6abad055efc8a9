"""Demo workflows a new account starts with, on the bundled local model (issue 7).

The demos' graphs are samples (``workflows/samples.py``: laid out for the editor, for any model);
``demo_graphs`` builds them on a provider and model, so tests run the very same graphs against the
fake server; ``demo_seed`` stores them for an account, skipping names it already has.
"""

from __future__ import annotations

from django.db import transaction

from providers.catalog import model_default
from providers.models import Provider
from providers.services import provider_create
from workflows import samples
from workflows.analysis import graph_issues
from workflows.models import Workflow
from workflows.services import workflow_create, workflow_publish

LOCAL_PROVIDER_NAME = "Local model (SmolLM2, offline)"
LOCAL_MODEL = "smollm2"

# The local model is small: short answers keep turns quick on a laptop CPU.
REPLY_TOKENS = 200
# The summarizer writes a sentence or two (the default summary prompt's narrative); what the user
# said about themselves is kept by Skein in their own words (memory/summary_prompt.py).
SUMMARY_TOKENS = 120


def demo_graphs(*, provider: int | None, model: str = LOCAL_MODEL, lookup_workflow: int | None = None) -> list[tuple[str, dict]]:
    """Every demo as (name, graph), calling ``model`` on ``provider``; the order desk too once
    ``lookup_workflow`` (the order lookup it calls) is given."""
    return samples.demos(
        {"model": model, "provider": provider}, reply_tokens=REPLY_TOKENS, summary_tokens=SUMMARY_TOKENS, lookup_workflow=lookup_workflow
    )


def chatbot_graph(model: dict, system_prompt: str, memory: dict | None = None, summarizer: dict | None = None) -> dict:
    """The demo chatbot with another prompt and memory (the memory-quality benchmark replays it)."""
    return samples.chatbot(model, system_prompt=system_prompt, memory=memory, summarizer=summarizer, max_tokens=REPLY_TOKENS)


def local_provider_get_or_create(*, owner) -> tuple[Provider, bool]:
    provider = Provider.objects.filter(owner=owner, kind="local").order_by("id").first()
    if provider is not None:
        return provider, False
    return provider_create(owner=owner, name=LOCAL_PROVIDER_NAME, kind="local"), True


@transaction.atomic
def demo_seed(*, owner, model: dict | None = None) -> list[Workflow]:
    """Store the demos that ``owner`` does not have yet (by name), on ``model`` (``{provider,
    model}``), by default the model a new node gets here (``selectors.model_default``: the bundled
    local model when no provider key is configured); returns the ones created.

    The order desk calls the order lookup as a tool, so the lookup is published here (a workflow
    tool calls published workflows only) before the desk is stored.

    Raises ``ValueError`` if a demo does not validate: a broken demo is a bug, not a user's draft."""
    model = model or model_default(owner=owner)
    existing = set(Workflow.objects.filter(owner=owner).values_list("name", flat=True))
    created = [_demo_create(owner, name, graph) for name, graph in demo_graphs(**model) if name not in existing]
    lookup = next((w for w in created if w.name == samples.ORDER_LOOKUP), None)
    lookup = lookup or Workflow.objects.filter(owner=owner, name=samples.ORDER_LOOKUP).order_by("id").first()
    if samples.ORDER_DESK not in existing and lookup is not None:
        if lookup.published_version is None:
            workflow_publish(workflow=lookup)
        desk = dict(demo_graphs(**model, lookup_workflow=lookup.pk))[samples.ORDER_DESK]
        created.append(_demo_create(owner, samples.ORDER_DESK, desk))
    return created


def _demo_create(owner, name: str, graph: dict) -> Workflow:
    from demo.conversation_tests import demo_tests_seed

    issues = graph_issues(graph=graph, owner=owner)
    if issues:
        raise ValueError(f"demo workflow {name!r} does not validate: {issues}")
    workflow = workflow_create(owner=owner, name=name, graph=graph)
    demo_tests_seed(workflow=workflow)  # each demo ships with conversation tests of what it shows
    return workflow
