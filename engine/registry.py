"""Node types: one class per type, declaring its ports, a pydantic params model and ``run``.

The built-in types are listed in ``workflows.nodes.NODE_TYPES`` and registered by the app config
(``workflows.apps``); the engine imports no node. The registry is served as JSON
(``GET /api/node-types/``) so the editor renders every node from its schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from engine.interfaces import ToolOutcome, ToolSpec


class PortKind(str, Enum):
    FLOW = "flow"
    MEMORY = "memory"
    LLM = "llm"
    TOOL = "tool"


@dataclass(frozen=True)
class Port:
    name: str
    kind: PortKind = PortKind.FLOW
    label: str = ""
    # Resource inputs: whether several resources may attach (e.g. one memory per consumer).
    multiple: bool = False

    def as_json(self) -> dict:
        return {"name": self.name, "kind": self.kind.value, "label": self.label or self.name, "multiple": self.multiple}


class Params(BaseModel):
    """Base of every node's params model: unknown keys are errors, so typos surface in the editor."""

    model_config = ConfigDict(extra="forbid")


@dataclass
class FlowValue:
    """What travels along a flow edge: text, optionally a list of chat messages."""

    text: str
    messages: list[dict] | None = None
    # The text is a model's answer cut at its max_tokens (it ends mid-answer).
    cut: bool = False


@dataclass
class NodeResult:
    outputs: dict[str, FlowValue]
    # Extra facts recorded on the run step (model, tokens, cost, the route chosen...).
    details: dict[str, Any] = field(default_factory=dict)
    # The text the participant sees (an ``output`` node): the run's reply joins these.
    reply: str | None = None
    # The reply is a model's answer cut at its max_tokens.
    reply_cut: bool = False
    # What the run step shows as this node's output, when not its outputs' text (a reply).
    output_text: str | None = None

    def step_details(self) -> dict[str, Any]:
        """What the run step records: the details, and the reply when the node gave one."""
        if self.reply is None:
            return self.details
        return {**self.details, "reply": self.reply, **({"cut": True} if self.reply_cut else {})}


def issue(node: str | None, field: str | None, message: str) -> dict:
    """A validation problem, keyed by node and field (``{node, field, message}``)."""
    return {"node": node, "field": field, "message": message}


class NodeError(Exception):
    """A node failed in a way the participant's run should report clearly (bad model answer...)."""


class NodeType:
    type: ClassVar[str]
    label: ClassVar[str]
    category: ClassVar[str]
    description: ClassVar[str] = ""
    Params: ClassVar[type[Params]] = Params
    inputs: ClassVar[tuple[Port, ...]] = ()
    outputs: ClassVar[tuple[Port, ...]] = ()
    is_trigger: ClassVar[bool] = False
    # Output ports named by a params list (a router's routes): the editor draws one handle per item.
    dynamic_outputs: ClassVar[str | None] = None
    # Runs at the start of the flow even with nothing flowing in, when one of its flow outputs is
    # wired (a memory emitting its messages).
    runs_as_source: ClassVar[bool] = False
    # What the editor shows under the node's title: parts like "{model}" or " · {timezone}", each
    # naming one param; a part whose param is empty is left out (the first line, 40 characters).
    summary: ClassVar[tuple[str, ...]] = ()

    def output_ports(self, params: Params) -> tuple[Port, ...]:
        return self.outputs

    def input_ports(self, params: Params) -> tuple[Port, ...]:
        return self.inputs

    def model_ref_of(self, params: Params):
        """The model this node calls (a ``ModelRef``), or None for nodes that call none."""
        return None

    def memory_spec(self, node_id: str, params: Params, attached) -> Any | None:
        """For a memory: the value ``memory/`` reads (``memory.spec.MemorySpec``); None for other
        nodes. ``attached(port)`` lists the nodes attached to one of this node's resource inputs."""
        return None

    def check(self, node_id: str, params: Params, graph_view: GraphView) -> list[dict]:
        """Checks beyond the params model that need the graph (e.g. a route with no edge)."""
        return []

    def run(self, ctx, inputs: dict[str, list[FlowValue]]) -> NodeResult:
        """Run the node: ``ctx`` is an ``engine.context.NodeContext``, ``inputs`` the values that
        arrived on each flow input."""
        raise NodeError(f"node type {self.type} cannot run on its own")

    # --- a tool (a node whose output is a ``tool`` port, attached to an LLM's ``tools``) ----------
    def tool_specs(self, ctx) -> list[ToolSpec]:
        """The functions this tool offers the model (``ctx``: the tool node's ``NodeContext``)."""
        return []

    def tool_call(self, ctx, name: str, arguments: dict, *, timeout: float) -> ToolOutcome:
        """Call one of ``tool_specs`` with arguments that match its schema, within ``timeout``
        seconds. A failure the model should hear about is a ``ToolOutcome`` with an ``error``."""
        raise NodeError(f"node type {self.type} is not a tool")

    @classmethod
    def describe(cls) -> dict:
        return {
            "type": cls.type,
            "label": cls.label,
            "category": cls.category,
            "description": cls.description,
            "inputs": [p.as_json() for p in cls.inputs],
            "outputs": [p.as_json() for p in cls.outputs],
            "dynamic_outputs": cls.dynamic_outputs,
            "is_trigger": cls.is_trigger,
            "summary": list(cls.summary),
            "params_schema": cls.Params.model_json_schema(),
        }


@dataclass
class GraphView:
    """What a node's ``check`` may look at: the edges touching it, by port."""

    incoming: dict[str, list[str]]  # target port -> source node ids
    outgoing: dict[str, list[str]]  # source port -> target node ids
    node_types: dict[str, str]  # node id -> type name, for the whole graph


_REGISTRY: dict[str, NodeType] = {}


def register(cls: type[NodeType]) -> type[NodeType]:
    if cls.type in _REGISTRY:
        raise RuntimeError(f"node type {cls.type} registered twice")
    _REGISTRY[cls.type] = cls()
    return cls


def register_all(classes) -> None:
    """Register node types in order (the app config registers ``workflows.nodes.NODE_TYPES``)."""
    for cls in classes:
        register(cls)


def get_node_type(type_name: str) -> NodeType | None:
    return _REGISTRY.get(type_name)


def all_node_types() -> list[NodeType]:
    return list(_REGISTRY.values())
