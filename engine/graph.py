"""The workflow graph: React Flow's own JSON shape (docs/graph.md#format), parsed into plain objects."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# Node ids name steps, webhooks and runs' trigger nodes in the database (100 characters) and
# appear in URLs: short, and made of letters, digits and ``_ . : -``.
NODE_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,99}")


class GraphShapeError(ValueError):
    """The graph is not even shaped like a graph (not an object, ``nodes`` not a list...)."""


@dataclass(frozen=True)
class Node:
    id: str
    type: str
    data: dict[str, Any]
    position: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Edge:
    id: str
    source: str
    target: str
    source_handle: str
    target_handle: str


@dataclass
class Graph:
    nodes: dict[str, Node]
    edges: list[Edge]
    # Problems found while parsing (duplicate ids, malformed entries), reported by validation.
    parse_issues: list[dict] = field(default_factory=list)

    @classmethod
    def parse(cls, raw: Any) -> Graph:
        if not isinstance(raw, dict):
            raise GraphShapeError("graph must be a JSON object with 'nodes' and 'edges' lists")
        raw_nodes = raw.get("nodes", [])
        raw_edges = raw.get("edges", [])
        if not isinstance(raw_nodes, list):
            raise GraphShapeError("graph.nodes must be a list")
        if not isinstance(raw_edges, list):
            raise GraphShapeError("graph.edges must be a list")

        issues: list[dict] = []
        nodes: dict[str, Node] = {}
        for index, item in enumerate(raw_nodes):
            if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
                issues.append(_issue(None, f"nodes[{index}]", "each node needs a non-empty string 'id'"))
                continue
            node_id = item["id"]
            if not NODE_ID.fullmatch(node_id):
                issues.append(
                    _issue(None, f"nodes[{index}].id", f"node id '{node_id[:40]}' must be 1-100 letters, digits, '_', '.', ':' or '-'")
                )
                continue
            if node_id in nodes:
                issues.append(_issue(node_id, "id", f"duplicate node id '{node_id}'"))
                continue
            node_type = item.get("type")
            data = item.get("data", {})
            if not isinstance(node_type, str):
                issues.append(_issue(node_id, "type", "node 'type' must be a string"))
                node_type = ""
            if data is None:
                data = {}
            if not isinstance(data, dict):
                issues.append(_issue(node_id, "data", "node 'data' must be an object"))
                data = {}
            position = item.get("position") if isinstance(item.get("position"), dict) else {}
            nodes[node_id] = Node(id=node_id, type=node_type, data=data, position=position)

        edges: list[Edge] = []
        seen_edges: set[str] = set()
        for index, item in enumerate(raw_edges):
            if not isinstance(item, dict):
                issues.append(_issue(None, f"edges[{index}]", "each edge must be an object"))
                continue
            source, target = item.get("source"), item.get("target")
            if not isinstance(source, str) or not isinstance(target, str):
                issues.append(_issue(None, f"edges[{index}]", "an edge needs string 'source' and 'target'"))
                continue
            edge_id = item.get("id") if isinstance(item.get("id"), str) else f"edge-{index}"
            if edge_id in seen_edges:
                edge_id = f"{edge_id}#{index}"
            seen_edges.add(edge_id)
            edges.append(
                Edge(
                    id=edge_id,
                    source=source,
                    target=target,
                    source_handle=_handle(item.get("sourceHandle"), "output"),
                    target_handle=_handle(item.get("targetHandle"), "input"),
                )
            )
        return cls(nodes=nodes, edges=edges, parse_issues=issues)

    def edges_into(self, node_id: str, port: str | None = None) -> list[Edge]:
        return [e for e in self.edges if e.target == node_id and (port is None or e.target_handle == port)]

    def edges_out_of(self, node_id: str, port: str | None = None) -> list[Edge]:
        return [e for e in self.edges if e.source == node_id and (port is None or e.source_handle == port)]


def _handle(value: Any, default: str) -> str:
    return value if isinstance(value, str) and value else default


def _issue(node: str | None, field_name: str | None, message: str) -> dict:
    return {"node": node, "field": field_name, "message": message}


def node_json(node_id: str, node_type: str, x: float = 0, y: float = 0, **data) -> dict:
    """A node in React Flow's JSON, as the editor saves it (for demos and tests)."""
    return {"id": node_id, "type": node_type, "position": {"x": x, "y": y}, "data": data}


def edge_json(source: str, target: str, source_handle: str = "output", target_handle: str = "input") -> dict:
    """An edge in React Flow's JSON; handle ids are port names. The id has the editor's format
    (``edgeId`` in frontend/src/editor/store.ts)."""
    return {
        "id": f"e_{source}.{source_handle}-{target}.{target_handle}",
        "source": source,
        "sourceHandle": source_handle,
        "target": target,
        "targetHandle": target_handle,
    }
