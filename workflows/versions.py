"""Published versions (reads): who published what and when, what changed between two, and the
version a caller pins (``?version=N`` or ``X-Skein-Version: N``). Restoring one into the draft is
a write: ``services.version_restore``."""

from __future__ import annotations

from django.db.models import QuerySet

from workflows.models import Workflow, WorkflowVersion

VERSION_HEADER = "X-Skein-Version"
MAX_VERSION = 2**31 - 1


class VersionNotFound(Exception):
    """The pinned or named version is not there (or the workflow was never published)."""


class BadVersion(ValueError):
    """A version that is not a number."""


# --- reads --------------------------------------------------------------------------------------
def version_list(*, workflow: Workflow) -> QuerySet[WorkflowVersion]:
    return workflow.versions.filter(number__isnull=False).select_related("published_by").order_by("-number")


def version_get(*, workflow: Workflow, number: int) -> WorkflowVersion | None:
    return workflow.versions.filter(number=number).first()


def version_number(value) -> int | None:
    """A version from a query parameter or header: None when absent, ``BadVersion`` when not a number."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    text = str(value).strip().lower().removeprefix("v")
    if not text.isdigit() or not 1 <= int(text) <= MAX_VERSION:
        raise BadVersion(f"version must be a published version's number, like 3 (got '{str(value)[:40]}')")
    return int(text)


def version_pinned(*, workflow: Workflow, value=None) -> WorkflowVersion:
    """The version ``value`` names, else the published one; ``VersionNotFound`` otherwise."""
    number = version_number(value)
    if number is None:
        if workflow.published_version is None:
            raise VersionNotFound("this workflow is not published yet")
        return workflow.published_version
    version = version_get(workflow=workflow, number=number)
    if version is None:
        raise VersionNotFound(f"this workflow has no version {number}")
    return version


def graph_of(*, workflow: Workflow, which) -> tuple[str, dict]:
    """("draft", the draft's graph) or (the number, that version's graph)."""
    if which in (None, "", "draft"):
        return "draft", workflow.graph or {}
    number = version_number(which)
    version = version_get(workflow=workflow, number=number)
    if version is None:
        raise VersionNotFound(f"this workflow has no version {number}")
    return str(number), version.graph or {}


def graph_diff(old: dict, new: dict) -> dict:
    """Nodes added, removed, changed (params and type; moves listed apart) and edges added and
    removed (an edge is its connection: source, handle, target, handle)."""
    old_nodes, new_nodes = _by_id(old.get("nodes")), _by_id(new.get("nodes"))
    changed, moved = [], []
    for node_id in sorted(old_nodes.keys() & new_nodes.keys()):
        before, after = old_nodes[node_id], new_nodes[node_id]
        params = _dict_diff(before.get("data") or {}, after.get("data") or {})
        if params or before.get("type") != after.get("type"):
            entry = {"id": node_id, "type": after.get("type"), "params": params}
            if before.get("type") != after.get("type"):
                entry["type_from"] = before.get("type")
            changed.append(entry)
        elif (before.get("position") or {}) != (after.get("position") or {}):
            moved.append(node_id)
    old_edges, new_edges = _edges(old.get("edges")), _edges(new.get("edges"))
    return {
        "nodes": {
            "added": [_node_summary(new_nodes[i]) for i in sorted(new_nodes.keys() - old_nodes.keys())],
            "removed": [_node_summary(old_nodes[i]) for i in sorted(old_nodes.keys() - new_nodes.keys())],
            "changed": changed,
            "moved": moved,
        },
        "edges": {
            "added": [new_edges[k] for k in sorted(new_edges.keys() - old_edges.keys())],
            "removed": [old_edges[k] for k in sorted(old_edges.keys() - new_edges.keys())],
        },
    }


def _by_id(nodes) -> dict:
    return {n["id"]: n for n in (nodes or []) if isinstance(n, dict) and isinstance(n.get("id"), str)}


def _node_summary(node: dict) -> dict:
    return {"id": node["id"], "type": node.get("type"), "params": node.get("data") or {}}


def _edges(edges) -> dict:
    listed = {}
    for e in edges or []:
        if isinstance(e, dict):
            key = (str(e.get("source")), str(e.get("sourceHandle")), str(e.get("target")), str(e.get("targetHandle")))
            listed[key] = {k: e.get(k) for k in ("id", "source", "sourceHandle", "target", "targetHandle")}
    return listed


def _dict_diff(before: dict, after: dict) -> dict:
    return {
        key: {"from": before.get(key), "to": after.get(key)}
        for key in sorted(before.keys() | after.keys())
        if before.get(key) != after.get(key)
    }
