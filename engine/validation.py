"""Graph validation: every problem, keyed by node and field (``{node, field, message}``)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict, defaultdict, deque
from dataclasses import dataclass

from pydantic import ValidationError

from engine.graph import Graph
from engine.interfaces import MemoryBinding
from engine.registry import GraphView, NodeType, Params, Port, PortKind, get_node_type, issue


@dataclass
class ResolvedNode:
    node_id: str
    node_type: NodeType
    params: Params
    inputs: dict[str, Port]
    outputs: dict[str, Port]


@dataclass
class Analysis:
    """A parsed graph with its node types and params resolved, plus every issue found."""

    graph: Graph
    nodes: dict[str, ResolvedNode]
    issues: list[dict]
    flow_order: list[str]
    edges: list  # the edges that connect existing ports of matching kinds

    @property
    def ok(self) -> bool:
        return not self.issues

    def attached(self, node_id: str, port: str) -> list[ResolvedNode]:
        """The nodes attached to one of ``node_id``'s resource inputs (a memory, a model)."""
        return [self.nodes[e.source] for e in self.edges if e.target == node_id and e.target_handle == port and e.source in self.nodes]

    def consumers(self, node_id: str) -> list[ResolvedNode]:
        """The nodes a memory is attached to."""
        return [self.nodes[e.target] for e in self.edges if e.source == node_id and e.source_handle == "memory" and e.target in self.nodes]

    def memory_binding(self, memory_id: str, consumer_id: str | None = None) -> MemoryBinding:
        """A memory node bound to one consumer (by default its first): the value ``memory/`` reads."""
        memory = self.nodes[memory_id]
        consumers = self.consumers(memory_id)
        consumer = self.nodes.get(consumer_id) if consumer_id else (consumers[0] if consumers else None)
        spec = memory.node_type.memory_spec(memory_id, memory.params, lambda port: self.attached(memory_id, port))
        return MemoryBinding(
            spec=spec,
            consumer_node=consumer.node_id if consumer else None,
            consumer_model=consumer.node_type.model_ref_of(consumer.params) if consumer else None,
            consumer_tools=bool(consumer and self.attached(consumer.node_id, "tools")),
        )


def analyze(graph: Graph) -> Analysis:
    issues = list(graph.parse_issues)
    resolved: dict[str, ResolvedNode] = {}

    for node in graph.nodes.values():
        node_type = get_node_type(node.type)
        if node_type is None:
            issues.append(issue(node.id, "type", f"unknown node type '{node.type}'"))
            continue
        try:
            params = node_type.Params.model_validate(node.data)
        except ValidationError as exc:
            for err in exc.errors():
                field = ".".join(str(part) for part in err["loc"]) or None
                issues.append(issue(node.id, field, err["msg"]))
            continue
        resolved[node.id] = ResolvedNode(
            node_id=node.id,
            node_type=node_type,
            params=params,
            inputs={p.name: p for p in node_type.input_ports(params)},
            outputs={p.name: p for p in node_type.output_ports(params)},
        )

    valid_edges = []
    unchecked_edges = []  # edges touching a node whose own problem is reported: their ports are unknown
    for edge in graph.edges:
        source, target = graph.nodes.get(edge.source), graph.nodes.get(edge.target)
        if source is None or target is None:
            missing = edge.source if source is None else edge.target
            anchor = edge.target if source is None and target is not None else (edge.source if source else None)
            issues.append(issue(anchor, "edges", f"edge '{edge.id}' points to a missing node '{missing}'"))
            continue
        if edge.source == edge.target:
            issues.append(issue(edge.source, "edges", f"edge '{edge.id}' connects the node to itself"))
            continue
        src, dst = resolved.get(edge.source), resolved.get(edge.target)
        if src is None or dst is None:
            unchecked_edges.append(edge)
            continue  # the node's own problem is already reported
        out_port = src.outputs.get(edge.source_handle)
        in_port = dst.inputs.get(edge.target_handle)
        if out_port is None:
            issues.append(issue(edge.source, edge.source_handle, f"'{src.node_type.type}' has no output '{edge.source_handle}'"))
            continue
        if in_port is None:
            issues.append(issue(edge.target, edge.target_handle, f"'{dst.node_type.type}' has no input '{edge.target_handle}'"))
            continue
        if out_port.kind != in_port.kind:
            issues.append(
                issue(
                    edge.target,
                    edge.target_handle,
                    f"cannot connect a {out_port.kind.value} output ({edge.source}.{out_port.name}) to a {in_port.kind.value} input",
                )
            )
            continue
        valid_edges.append(edge)

    incoming: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    outgoing: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for edge in valid_edges:
        incoming[edge.target][edge.target_handle].append(edge.source)
        outgoing[edge.source][edge.source_handle].append(edge.target)

    node_types = {n.id: n.type for n in graph.nodes.values()}
    for node_id, rn in resolved.items():
        for port in rn.inputs.values():
            if port.kind != PortKind.FLOW and not port.multiple and len(incoming[node_id][port.name]) > 1:
                issues.append(issue(node_id, port.name, f"only one {port.kind.value} can attach to '{port.name}'"))
        view = GraphView(incoming=dict(incoming[node_id]), outgoing=dict(outgoing[node_id]), node_types=node_types)
        issues.extend(rn.node_type.check(node_id, rn.params, view))

    flow_edges = [e for e in valid_edges if resolved[e.source].outputs[e.source_handle].kind == PortKind.FLOW]
    # A resource node that takes part in the flow (a memory whose set_history is fed) runs before
    # the nodes it is attached to: they read what it replaced, in the same run (docs/memory.md#replacing-a-history-set_history).
    in_flow, flow_set = {e.target for e in flow_edges}, set(flow_edges)
    runs_first = [e for e in valid_edges if e.source in in_flow and e not in flow_set]
    order, cyclic = _topological_order(list(graph.nodes), flow_edges + runs_first)
    looped = set(cyclic)
    for node_id in cyclic:
        issues.append(issue(node_id, None, "this node is part of a cycle; flow edges must not loop back"))
    for edge in runs_first:
        if edge.source in looped and edge.target in looped:
            issues.append(
                issue(
                    edge.source,
                    "set_history",
                    f"'{edge.target}' reads this memory, so it cannot also feed its set_history: "
                    "the history is replaced before the nodes that read it run",
                )
            )

    triggers = [n for n, rn in resolved.items() if rn.node_type.is_trigger]
    if not triggers:
        issues.append(issue(None, None, "add a trigger node (chat, webhook, schedule or manual) to start the workflow"))
    else:
        # A node with a problem of its own passes the flow on as far as reachability goes: its
        # problem is reported once, on it, not again on every node behind it.
        pairs = [(e.source, e.target) for e in flow_edges + unchecked_edges if _may_carry_flow(e, graph, resolved)]
        reached = _reachable(triggers, pairs)
        outputs = [n for n in graph.nodes if graph.nodes[n].type == "output"]
        for node_id in outputs:
            if node_id in resolved and node_id not in reached:
                issues.append(issue(node_id, "input", "no trigger reaches this output; connect it to the flow"))
        answered = _reachable(outputs, [(target, source) for source, target in pairs])  # the nodes from which an output is reached
        for node_id, rn in resolved.items():
            if rn.node_type.type == "trigger.chat" and node_id not in answered:
                issues.append(
                    issue(node_id, "output", "nothing answers a chat message here: connect this trigger (through an LLM) to an Output node")
                )

    return Analysis(graph=graph, nodes=resolved, issues=issues, flow_order=order, edges=valid_edges)


def _topological_order(node_ids: list[str], edges) -> tuple[list[str], list[str]]:
    """Kahn's order of the flow graph, and the nodes on cycles. Each edge is looked at a bounded
    number of times: linear in the size of the graph."""
    pairs = [(edge.source, edge.target) for edge in edges]
    order, left = _peel(node_ids, pairs)
    # Kahn leaves cycles and whatever hangs below them; peel off the nodes that lead nowhere, the
    # same way backwards.
    inside = [(target, source) for source, target in pairs if source in left and target in left]
    _peeled, on_cycles = _peel([n for n in node_ids if n in left], inside)
    return order, [n for n in node_ids if n in on_cycles]


def _peel(node_ids: list[str], pairs: list[tuple[str, str]]) -> tuple[list[str], set[str]]:
    """Repeatedly remove the nodes nothing points to: (the removal order, what could not be removed)."""
    indegree = dict.fromkeys(node_ids, 0)
    adjacency: dict[str, list[str]] = defaultdict(list)
    for source, target in pairs:
        adjacency[source].append(target)
        indegree[target] += 1
    queue = deque(n for n in node_ids if indegree[n] == 0)
    order = []
    while queue:
        current = queue.popleft()
        order.append(current)
        for nxt in adjacency[current]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                queue.append(nxt)
    return order, {n for n in node_ids if indegree[n] > 0}


def _may_carry_flow(edge, graph: Graph, resolved: dict[str, ResolvedNode]) -> bool:
    """Whether an edge touching a node that did not resolve may be a flow edge: neither end is a
    port known to carry a resource (a node whose params are invalid still has its type's ports)."""
    for node_id, handle, side in ((edge.source, edge.source_handle, "outputs"), (edge.target, edge.target_handle, "inputs")):
        if node_id in resolved:
            port = getattr(resolved[node_id], side).get(handle)
        else:
            node_type = get_node_type(graph.nodes[node_id].type)
            port = next((p for p in getattr(node_type, side, ()) if p.name == handle), None) if node_type else None
        if port is not None and port.kind != PortKind.FLOW:
            return False
    return True


def _reachable(starts: list[str], pairs: list[tuple[str, str]]) -> set[str]:
    """The nodes reached from ``starts`` along (source, target) pairs, the starts included."""
    adjacency: dict[str, list[str]] = defaultdict(list)
    for source, target in pairs:
        adjacency[source].append(target)
    seen = set(starts)
    stack = list(starts)
    while stack:
        for nxt in adjacency[stack.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def validate(raw_graph) -> list[dict]:
    """Every issue of a raw graph; a graph that is not graph-shaped raises ``GraphShapeError``."""
    return analyze(Graph.parse(raw_graph)).issues


_ANALYSES: OrderedDict[str, Analysis] = OrderedDict()
_ANALYSES_LOCK = threading.Lock()
ANALYSES_KEPT = 256


def analyze_raw(raw_graph) -> Analysis:
    """``analyze(Graph.parse(raw_graph))``, computed once per distinct graph and process (a draft
    revision is read many times: every GET, every autosave answer). Treat the result as read-only."""
    key = hashlib.sha256(json.dumps(raw_graph, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    with _ANALYSES_LOCK:
        cached = _ANALYSES.get(key)
        if cached is not None:
            _ANALYSES.move_to_end(key)
            return cached
    analysis = analyze(Graph.parse(raw_graph))
    with _ANALYSES_LOCK:
        _ANALYSES[key] = analysis
        while len(_ANALYSES) > ANALYSES_KEPT:
            _ANALYSES.popitem(last=False)
    return analysis
