"""Demo workflows a new account starts with, on the bundled local model (issue 7).

Each demo is a React Flow graph (DESIGN.md §3) laid out left to right for the editor: flow nodes on
one row, the resources they consume (memory, a summarizer model) below the node that uses them.
``demo_graphs`` builds them for any provider and model, so tests can run the very same graphs
against the fake server; ``demo_seed`` stores them for an account, skipping names it already has.
"""

from __future__ import annotations

from django.db import transaction

from .analysis import graph_issues
from .engine.graph import edge_json, node_json
from .models import Provider, Workflow
from .selectors import model_default
from .services import provider_create, workflow_create

LOCAL_PROVIDER_NAME = "Local model (SmolLM2, offline)"
LOCAL_MODEL = "smollm2"

# Layout: flow nodes every COLUMN px on the row y=0; resources one ROW below their consumer.
COLUMN = 300
ROW = 220

# The local model is small: short answers keep turns quick on a laptop CPU.
REPLY_TOKENS = 200
# The summarizer writes a sentence or two (the default summary prompt's narrative); what the user
# said about themselves is kept by Skein in their own words (memory/summary_prompt.py).
SUMMARY_TOKENS = 120
# A small model answering from its memory sticks to what it was told at a low temperature.
ANSWER_TEMPERATURE = 0.2
BILLING_PATTERN = r"/(?i)\b(bill|billing|billed|invoice|invoices|refund|refunds|payment|payments|charge|charged|subscription|price|pricing|receipt|card)\b/"


def _node(node_id: str, node_type: str, column: float, row: float = 0, **data) -> dict:
    return node_json(node_id, node_type, int(column * COLUMN), int(row * ROW), **data)


def chatbot_graph(model: dict, system_prompt: str, memory: dict | None = None, summarizer: dict | None = None) -> dict:
    """trigger.chat -> llm -> output, with an optional memory below the llm (and a model below that)."""
    nodes = [
        _node("chat", "trigger.chat", 0),
        _node("assistant", "llm", 1, **model, system_prompt=system_prompt, max_tokens=REPLY_TOKENS),
        _node("reply", "output", 2),
    ]
    edges = [edge_json("chat", "assistant"), edge_json("assistant", "reply")]
    if memory is not None:
        memory = dict(memory)
        nodes.append(_node("memory", memory.pop("type"), 1, 1, **memory))
        edges.append(edge_json("memory", "assistant", "memory", "memory"))
    if summarizer is not None:
        nodes.append(_node("summarizer", "llm.model", 1, 2, **summarizer))
        edges.append(edge_json("summarizer", "memory", "llm", "llm"))
    return {"nodes": nodes, "edges": edges}


def _router(model: dict) -> dict:
    """Billing questions go to a billing assistant, everything else to a general one; both reply."""
    routes = [
        {"name": "billing", "match": BILLING_PATTERN},
        {"name": "general", "match": ""},
    ]
    nodes = [
        _node("chat", "trigger.chat", 0, 0.5),
        _node("route", "router.static", 1, 0.5, routes=routes, default_route="general"),
        _node(
            "billing",
            "llm",
            2,
            0,
            **model,
            system_prompt=(
                "You are the billing assistant of a software company. Help with invoices, payments, refunds and "
                "subscriptions. Answer in two or three short sentences."
            ),
            max_tokens=REPLY_TOKENS,
        ),
        _node(
            "general",
            "llm",
            2,
            1,
            **model,
            system_prompt="You are a friendly general assistant. Answer in two or three short sentences.",
            max_tokens=REPLY_TOKENS,
        ),
        _node("reply", "output", 3, 0.5),
    ]
    edges = [
        edge_json("chat", "route"),
        edge_json("route", "billing", "billing"),
        edge_json("route", "general", "general"),
        edge_json("billing", "reply"),
        edge_json("general", "reply"),
    ]
    return {"nodes": nodes, "edges": edges}


def _webhook(model: dict) -> dict:
    """POST {"message": ...} to the webhook URL (``?wait=1`` to get the reply in the answer)."""
    nodes = [
        _node("hook", "trigger.webhook", 0),
        _node(
            "assistant",
            "llm",
            1,
            **model,
            system_prompt="You answer messages that arrive by webhook. Reply in one or two short sentences.",
            max_tokens=REPLY_TOKENS,
        ),
        _node("reply", "output", 2),
    ]
    return {"nodes": nodes, "edges": [edge_json("hook", "assistant"), edge_json("assistant", "reply")]}


def demo_graphs(*, provider: int | None, model: str = LOCAL_MODEL) -> list[tuple[str, dict]]:
    """Every demo as (name, graph), calling ``model`` on ``provider``."""
    ref = {"model": model, "provider": provider}
    helpful = "You are a helpful assistant. Answer briefly and clearly."
    return [
        ("Demo: chatbot", chatbot_graph(ref, helpful)),
        (
            "Demo: chatbot with full memory (buffer)",
            chatbot_graph(ref, helpful + " Use what the user told you earlier.", memory={"type": "memory.buffer"}),
        ),
        (
            "Demo: chatbot with recent memory (window)",
            chatbot_graph(
                ref,
                helpful + " You only remember the last few messages.",
                memory={"type": "memory.window", "max_messages": 6},
            ),
        ),
        (
            "Demo: summarizing chatbot (summary)",
            chatbot_graph(
                {**ref, "temperature": ANSWER_TEMPERATURE},
                helpful + " Use the conversation summary and the recent messages.",
                memory={
                    "type": "memory.summary",
                    "max_messages": 8,
                    "keep_last": 4,
                    "llm_source": "external",
                },
                summarizer={**ref, "temperature": 0.2, "max_tokens": SUMMARY_TOKENS},
            ),
        ),
        ("Demo: billing router", _router(ref)),
        ("Demo: webhook", _webhook(ref)),
    ]


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

    Raises ``ValueError`` if a demo does not validate: a broken demo is a bug, not a user's draft."""
    existing = set(Workflow.objects.filter(owner=owner).values_list("name", flat=True))
    created = []
    for name, graph in demo_graphs(**(model or model_default(owner=owner))):
        if name in existing:
            continue
        issues = graph_issues(graph=graph, owner=owner)
        if issues:
            raise ValueError(f"demo workflow {name!r} does not validate: {issues}")
        workflow = workflow_create(owner=owner, name=name, graph=graph)
        from .conversation_tests.demo import demo_tests_seed

        demo_tests_seed(workflow=workflow)  # each demo ships with conversation tests of what it shows
        created.append(workflow)
    return created
