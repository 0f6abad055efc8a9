"""Every sample graph Skein ships, written once: the demos a new account starts with
(``demo/seed.py`` seeds them), the templates of the workflow list (``GET /api/templates/``)
and the graphs tests build on (``tests/graphs.py``).

A sample is a function of a model ref and options returning a graph in React Flow's JSON
(docs/graph.md#format). The model ref (``{"model", "provider"}``, plus any other param of the nodes that
call a model; ``{}`` leaves the node types' defaults) goes on every node that calls a model. Node
ids are an option because each user of a sample names its nodes: the demos' conversation tests
name ``assistant``, a template's nodes are named as the editor names a dropped node (``llm_1``),
tests name theirs. Pure Python, no Django: tests and benchmarks build graphs without a database.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from engine.graph import edge_json, node_json
from providers.catalog import model_default
from workflows import samples

ModelRef = Mapping[str, object]


@dataclass(frozen=True)
class Layout:
    """Where nodes sit, left to right for the editor: flow nodes one column apart on a row, the
    resources a node consumes (memory, a summarizer model) a row below it."""

    column: int = 300
    row: int = 220

    def node(self, node_id: str, node_type: str, column: float, row: float = 0, **data) -> dict:
        return node_json(node_id, node_type, int(column * self.column), int(row * self.row), **data)


LAYOUT = Layout()

# --- the samples ---------------------------------------------------------------------------------------
CHATBOT_IDS = {"trigger": "chat", "llm": "assistant", "output": "reply", "memory": "memory", "summarizer": "summarizer"}


def chatbot(
    model: ModelRef,
    *,
    system_prompt: str,
    memory: Mapping | None = None,
    summarizer: ModelRef | None = None,
    max_tokens: int | None = None,
    trigger: str = "trigger.chat",
    ids: Mapping[str, str] | None = None,
    layout: Layout = LAYOUT,
) -> dict:
    """trigger -> llm -> output; ``memory`` (its ``type`` and params) below the llm, and a
    ``summarizer`` model (an ``llm.model`` on that ref) below the memory."""
    ids = {**CHATBOT_IDS, **(ids or {})}
    llm = {**model, "system_prompt": system_prompt} | ({"max_tokens": max_tokens} if max_tokens is not None else {})
    nodes = [
        layout.node(ids["trigger"], trigger, 0),
        layout.node(ids["llm"], "llm", 1, **llm),
        layout.node(ids["output"], "output", 2),
    ]
    edges = [edge_json(ids["trigger"], ids["llm"]), edge_json(ids["llm"], ids["output"])]
    if memory is not None:
        params = dict(memory)
        nodes.append(layout.node(ids["memory"], params.pop("type"), 1, 1, **params))
        edges.append(edge_json(ids["memory"], ids["llm"], "memory", "memory"))
    if summarizer is not None:
        nodes.append(layout.node(ids["summarizer"], "llm.model", 1, 2, **summarizer))
        edges.append(edge_json(ids["summarizer"], ids["memory"], "llm", "llm"))
    return {"nodes": nodes, "edges": edges}


def agent(model: ModelRef, *, system_prompt: str, tools: list[dict], memory: Mapping | None = None, ids=None, layout=LAYOUT, **llm) -> dict:
    """A chatbot whose llm calls ``tools`` (each a node: ``{"id", "type", ...params}``), attached to
    its ``tools`` port, below it."""
    graph = chatbot(model, system_prompt=system_prompt, memory=memory, ids=ids, layout=layout)
    llm_id = {**CHATBOT_IDS, **(ids or {})}["llm"]
    for node in graph["nodes"]:
        if node["id"] == llm_id:
            node["data"].update(llm)
    for index, tool in enumerate(tools):
        params = dict(tool)
        tool_id, tool_type = params.pop("id"), params.pop("type")
        graph["nodes"].append(layout.node(tool_id, tool_type, 1 + index, 2, **params))
        graph["edges"].append(edge_json(tool_id, llm_id, "tool", "tools"))
    return graph


ROUTER_IDS = {"trigger": "chat", "router": "route", "billing": "billing", "general": "general", "output": "reply"}
BILLING_PATTERN = r"/(?i)\b(bill|billing|billed|invoice|invoices|refund|refunds|payment|payments|charge|charged|subscription|price|pricing|receipt|card)\b/"
BILLING_PROMPT = (
    "You are the billing assistant of a software company. Help with invoices, payments, refunds and "
    "subscriptions. Answer in two or three short sentences."
)
GENERAL_PROMPT = "You are a friendly general assistant. Answer in two or three short sentences."


def billing_router(
    model: ModelRef,
    *,
    by_model: bool = False,
    billing_prompt: str = BILLING_PROMPT,
    general_prompt: str = GENERAL_PROMPT,
    max_tokens: int | None = None,
    ids: Mapping[str, str] | None = None,
    layout: Layout = LAYOUT,
) -> dict:
    """Billing questions go to a billing assistant, everything else to a general one; both reply.
    The router matches keywords (``router.static``), or ``by_model`` asks the model (``router.llm``)."""
    ids = {**ROUTER_IDS, **(ids or {})}
    if by_model:
        routes = [
            {"name": "billing", "description": "invoices, payments, refunds, prices"},
            {"name": "general", "description": "anything else"},
        ]
        router = layout.node(ids["router"], "router.llm", 1, 0.5, **model, routes=routes, default_route="general")
    else:
        routes = [{"name": "billing", "match": BILLING_PATTERN}, {"name": "general", "match": ""}]
        router = layout.node(ids["router"], "router.static", 1, 0.5, routes=routes, default_route="general")
    capped = {"max_tokens": max_tokens} if max_tokens is not None else {}
    nodes = [
        layout.node(ids["trigger"], "trigger.chat", 0, 0.5),
        router,
        layout.node(ids["billing"], "llm", 2, 0, **model, system_prompt=billing_prompt, **capped),
        layout.node(ids["general"], "llm", 2, 1, **model, system_prompt=general_prompt, **capped),
        layout.node(ids["output"], "output", 3, 0.5),
    ]
    edges = [
        edge_json(ids["trigger"], ids["router"]),
        edge_json(ids["router"], ids["billing"], "billing"),
        edge_json(ids["router"], ids["general"], "general"),
        edge_json(ids["billing"], ids["output"]),
        edge_json(ids["general"], ids["output"]),
    ]
    return {"nodes": nodes, "edges": edges}


# --- the demos (seeded for a new account by demo/seed.py) ------------------------------------------
HELPFUL = "You are a helpful assistant. Answer briefly and clearly."
# A small model answering from its memory sticks to what it was told at a low temperature.
ANSWER_TEMPERATURE = 0.2
SUMMARIZER_TEMPERATURE = 0.2


ORDER_LOOKUP, ORDER_DESK = "Demo: order lookup", "Demo: order desk"
# The order lookup's whole database: a template matching the numbers in the message it is sent.
ORDERS = {
    "1042": "shipped on 28 November with Posta, arriving 2 December",
    "1043": "paid, waiting to be packed",
    "1044": "delivered on 25 November",
    "1045": "cancelled; the payment was refunded",
}
ORDER_TABLE = (
    "{%- set orders = " + repr(ORDERS) + " -%}\n"
    "{%- for number, status in orders.items() if number in input -%}Order {{ number }}: {{ status }}.{{ ' ' if not loop.last }}"
    "{%- else -%}No order matches '{{ input[:40] }}'.{%- endfor -%}"
)
ORDER_DESK_PROMPT = (
    "You are the order desk of a small shop. Look the customer's order up with lookup_order, sending the order's number, "
    "then tell them in one or two sentences what it says."
)


def order_lookup(*, layout: Layout = LAYOUT) -> dict:
    """trigger.chat -> template -> output: answers from a small fixed order table (no model)."""
    nodes = [
        layout.node("chat", "trigger.chat", 0),
        layout.node("table", "template", 1, template=ORDER_TABLE),
        layout.node("reply", "output", 2),
    ]
    return {"nodes": nodes, "edges": [edge_json("chat", "table"), edge_json("table", "reply")]}


def order_desk(model: ModelRef, *, lookup_workflow: int, max_tokens: int | None = None) -> dict:
    """An agent that must look the order up (a ``tool.workflow`` calling ``lookup_workflow``, the
    order lookup) before it answers with what it found."""
    lookup = {
        "id": "lookup",
        "type": "tool.workflow",
        "workflow": lookup_workflow,
        "name": "lookup_order",
        "description": "Look up an order by its number",
        "timeout_s": 30.0,
    }
    capped = {"max_tokens": max_tokens} if max_tokens is not None else {}
    return agent(model, system_prompt=ORDER_DESK_PROMPT, tools=[lookup], call_tool_first=True, max_tool_rounds=2, **capped)


def demos(
    model: ModelRef, *, reply_tokens: int | None = None, summary_tokens: int | None = None, lookup_workflow: int | None = None
) -> list[tuple[str, dict]]:
    """Every demo as (name, graph); the names are what the demos' conversation tests are keyed by
    (demo/conversation_tests.py). The order desk calls the order lookup, a published workflow: it
    is among them once ``lookup_workflow`` (that workflow's id) is given."""
    capped = {"max_tokens": reply_tokens}
    desk = [(ORDER_DESK, order_desk(model, lookup_workflow=lookup_workflow, max_tokens=reply_tokens))] if lookup_workflow else []
    summarizer = {**model, "temperature": SUMMARIZER_TEMPERATURE} | ({"max_tokens": summary_tokens} if summary_tokens else {})
    return [
        ("Demo: chatbot", chatbot(model, system_prompt=HELPFUL, **capped)),
        (
            "Demo: chatbot with full memory (buffer)",
            chatbot(model, system_prompt=HELPFUL + " Use what the user told you earlier.", memory={"type": "memory.buffer"}, **capped),
        ),
        (
            "Demo: chatbot with recent memory (window)",
            chatbot(
                model,
                system_prompt=HELPFUL + " You only remember the last few messages.",
                memory={"type": "memory.window", "max_messages": 6},
                **capped,
            ),
        ),
        (
            "Demo: summarizing chatbot (summary)",
            chatbot(
                {**model, "temperature": ANSWER_TEMPERATURE},
                system_prompt=HELPFUL + " Use the conversation summary and the recent messages.",
                memory={"type": "memory.summary", "max_messages": 8, "keep_last": 4, "llm_source": "external"},
                summarizer=summarizer,
                **capped,
            ),
        ),
        ("Demo: billing router", billing_router(model, **capped)),
        (
            # POST {"message": ...} to the webhook URL (``?wait=1`` to get the reply in the answer).
            "Demo: webhook",
            chatbot(
                model,
                system_prompt="You answer messages that arrive by webhook. Reply in one or two short sentences.",
                trigger="trigger.webhook",
                ids={"trigger": "hook"},
                **capped,
            ),
        ),
        (ORDER_LOOKUP, order_lookup()),
        *desk,
    ]


# --- the templates (the workflow list's "Start from a template") ----------------------------------------
FRIENDLY = "You are a friendly, concise assistant."


def _editor_ids(memory_type: str) -> dict[str, str]:
    """The ids the editor gives nodes dropped on an empty canvas (``uniqueNodeId`` in
    frontend/src/editor/store.ts): the type's last part and a number."""
    return {"trigger": "chat_1", "llm": "llm_1", "output": "output_1", "memory": memory_type.split(".")[-1] + "_1"}


@dataclass(frozen=True)
class Template:
    key: str
    name: str
    description: str
    build: Callable[[ModelRef], dict]


TEMPLATES: tuple[Template, ...] = (
    Template(
        "blank", "Blank workflow", "An empty canvas. Drag a trigger from the palette to begin.", lambda model: {"nodes": [], "edges": []}
    ),
    Template(
        "chatbot",
        "Chatbot",
        "Chat message → LLM → reply, with the whole conversation as memory.",
        lambda model: chatbot(model, system_prompt=FRIENDLY, memory={"type": "memory.buffer"}, ids=_editor_ids("memory.buffer")),
    ),
    Template(
        "summary",
        "Chatbot with summarizing memory",
        "Long conversations stay cheap: older turns are condensed into a running summary.",
        lambda model: chatbot(
            model,
            system_prompt=FRIENDLY,
            memory={"type": "memory.summary", "max_messages": 20, "keep_last": 6},
            ids=_editor_ids("memory.summary"),
        ),
    ),
    Template(
        "router",
        "Router",
        "A model sorts each message into a route; each route has its own assistant.",
        lambda model: billing_router(
            model,
            by_model=True,
            billing_prompt="You are a billing specialist. Be precise about amounts and dates.",
            general_prompt="You are a friendly general assistant.",
            ids={"trigger": "chat_1", "router": "router_1", "billing": "llm_billing", "general": "llm_general", "output": "output_1"},
        ),
    ),
)


def templates(model: ModelRef) -> list[dict]:
    """Every template as ``{key, name, description, graph}``, its nodes that call a model on ``model``."""
    return [{"key": t.key, "name": t.name, "description": t.description, "graph": t.build(model)} for t in TEMPLATES]


def template_list(*, owner) -> list[dict]:
    """The workflow list's templates (``samples.TEMPLATES``), their nodes that call a model on the
    model a new node gets here, so a workflow made from one answers at once."""
    return samples.templates(model_default(owner=owner))
