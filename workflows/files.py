"""Workflow files: a workflow as a JSON file to keep in Git and import anywhere.

``{"skein": 1, "name": ..., "graph": ...}``: the graph as the editor saves it (node ids kept), with
nothing secret and no database id. A node's ``provider`` (a provider's id) is written as
``{"name", "kind"}`` and matched back by name and kind when the file is imported; what cannot be
matched is dropped from the node and reported. A file of a format version this Skein does not
read, with node types it does not know, or that is not a workflow at all is refused as a whole:
nothing is created.
"""

from __future__ import annotations

import copy
import json

from django.conf import settings
from django.db import transaction

from core.text import BadJSON, contains_nul, parse_json
from engine.graph import Graph, GraphShapeError
from engine.registry import get_node_type
from providers.models import Provider
from workflows import services
from workflows.models import Workflow

FORMAT_VERSION = 1
PROVIDER_PARAM = "provider"


class FileRefused(Exception):
    """The file cannot be imported; ``message`` says why."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def file_name(workflow_name: str) -> str:
    slug = "".join(c if c.isalnum() else "-" for c in workflow_name.lower()).strip("-")
    while "--" in slug:
        slug = slug.replace("--", "-")
    return f"{slug or 'workflow'}.skein.json"


def workflow_export(*, workflow: Workflow) -> dict:
    providers = {p.pk: p for p in Provider.objects.filter(owner_id=workflow.owner_id)}
    graph = copy.deepcopy(workflow.graph or {})
    for node in graph.get("nodes") or []:
        data = node.get("data") if isinstance(node, dict) else None
        if not isinstance(data, dict) or PROVIDER_PARAM not in data:
            continue
        provider = providers.get(data[PROVIDER_PARAM]) if isinstance(data[PROVIDER_PARAM], int) else None
        if provider is None:
            data.pop(PROVIDER_PARAM)  # none, or one that no longer exists: nothing to refer to
        else:
            data[PROVIDER_PARAM] = {"name": provider.name, "kind": provider.kind}
    return {"skein": FORMAT_VERSION, "name": workflow.name, "graph": graph}


def file_dumps(data: dict) -> str:
    """Stable text for Git: sorted keys, two-space indents, a final newline."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def file_parse(raw: bytes | str) -> dict:
    """A file's JSON, checked: ``FileRefused`` for anything that is not a workflow file we read."""
    size = len(raw.encode() if isinstance(raw, str) else raw)
    if size > settings.SKEIN_IMPORT_MAX_BYTES:
        raise FileRefused(f"the file is larger than workflow files are limited to ({settings.SKEIN_IMPORT_MAX_BYTES} bytes)")
    try:
        data = parse_json(raw)
    except BadJSON as exc:
        raise FileRefused(f"the file is not JSON that Skein reads ({exc})") from None
    return file_check(data)


def file_check(data) -> dict:
    if not isinstance(data, dict) or "graph" not in data and "skein" not in data:
        raise FileRefused('this is not a Skein workflow file: expected {"skein": 1, "name": ..., "graph": ...}')
    version = data.get("skein")
    if version is None:
        raise FileRefused('this is not a Skein workflow file: it has no "skein" format version')
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise FileRefused(f"unknown workflow file format version {json.dumps(version)[:40]}: this Skein reads version {FORMAT_VERSION}")
    if version > FORMAT_VERSION:
        raise FileRefused(
            f"this file has format version {version}, newer than this Skein reads ({FORMAT_VERSION}): update Skein to import it"
        )
    name = data.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise FileRefused('"name" must be a non-empty string of at most 200 characters')
    if contains_nul(data):
        raise FileRefused("NUL characters (\\u0000) are not allowed")
    try:
        graph = Graph.parse(data.get("graph"))
    except GraphShapeError as exc:
        raise FileRefused(f"the graph is malformed: {exc}") from None
    unknown = sorted({(n.type, n.id) for n in graph.nodes.values() if get_node_type(n.type) is None})
    if unknown:
        listed = ", ".join(f"'{t}' (node {i})" for t, i in unknown[:20])
        raise FileRefused(f"unknown node types: {listed}; this Skein has no such node")
    return data


def workflow_import(*, owner, data: dict, name: str | None = None, into: Workflow | None = None) -> tuple[Workflow, list[dict]]:
    """Create a workflow from a checked file (or, with ``into``, make it that workflow's draft).

    Returns the workflow and what could not be mapped, as ``{node, field, message}`` issues."""
    data = file_check(data)
    graph = copy.deepcopy(data["graph"])
    # the oldest provider of a name and kind, if the owner has several
    providers = {(p.name, p.kind): p.pk for p in Provider.objects.filter(owner=owner).order_by("-pk")}
    unmapped = []
    for node in graph.get("nodes") or []:
        params = node.get("data")
        if not isinstance(params, dict) or PROVIDER_PARAM not in params:
            continue
        ref = params.pop(PROVIDER_PARAM)
        if ref is None:
            continue
        if isinstance(ref, dict) and isinstance(ref.get("name"), str) and isinstance(ref.get("kind"), str):
            provider_id = providers.get((ref["name"], ref["kind"]))
            if provider_id is not None:
                params[PROVIDER_PARAM] = provider_id
                continue
            message = f"no provider named '{ref['name'][:100]}' of kind '{ref['kind'][:40]}': add one on the Providers page, or pick one in this node"
        else:
            message = "the provider is not named by name and kind, so it cannot be matched: pick one in this node"
        unmapped.append({"node": node.get("id"), "field": PROVIDER_PARAM, "message": message})
    with transaction.atomic():
        if into is None:
            workflow = services.workflow_create(owner=owner, name=(name or data["name"]).strip()[:200], graph=graph)
        else:
            fields = {"graph": graph} | ({"name": name.strip()[:200]} if name else {})
            workflow = services.workflow_update(workflow=into, revision=into.revision, **fields)
    return workflow, unmapped
