"""Graph analysis as the app uses it: a graph's problems for its owner, and the analysis of a
published or snapshotted version, computed once per process (versions are immutable)."""

from __future__ import annotations

import ipaddress
import json
import threading
from functools import lru_cache
from urllib.parse import urlsplit

from core import netguard
from core.errors import DomainError
from engine.graph import Graph
from engine.registry import issue
from engine.validation import Analysis, analyze, analyze_raw
from providers.models import Provider
from tools import selectors as tool_selectors
from workflows.models import WorkflowVersion


class InvalidWorkflow(DomainError):
    """A graph that cannot be published or run: ``issues`` are ``{node, field, message}`` (HTTP 400)."""

    def __init__(self, issues: list[dict]):
        super().__init__("the workflow has errors")
        self.issues = issues

    def body(self) -> dict:
        return {"detail": self.message, "errors": self.issues}


def graph_issues(*, graph, owner, workflow_id: int | None = None) -> list[dict]:
    """Every problem of a graph for this owner: the engine's checks, plus the providers its models
    name (they must be the owner's) and credentials for each model (a key stored or in the
    environment), and its tools' references (``tool_issues``; ``workflow_id``: the graph's own
    workflow, which its workflow tools must not call back).

    Raises ``GraphShapeError`` for input that is not graph-shaped at all."""
    from providers import llm  # litellm is imported on first use, not by importing this module

    analysis = analyze_raw(graph)
    issues = list(analysis.issues)
    callers = [rn for rn in analysis.nodes.values() if rn.node_type.model_ref_of(rn.params) is not None]
    wanted = {rn.params.provider for rn in callers if rn.params.provider}
    owned = {p.pk: p for p in Provider.objects.filter(owner=owner, pk__in=list(wanted))} if wanted else {}
    for rn in callers:
        pid = rn.params.provider
        if pid and pid not in owned:
            issues.append(issue(rn.node_id, "provider", f"provider {pid} does not exist"))
        elif problem := llm.credentials_problem(model=rn.params.model, provider=owned.get(pid)):
            issues.append(issue(rn.node_id, "model", problem))
    return issues + tool_issues(analysis, owner_id=owner.pk, workflow_id=workflow_id)


MAX_CALLED_WORKFLOWS = 50  # a workflow tool's calls followed this far when looking for a cycle


def tool_issues(analysis: Analysis, *, owner_id: int, workflow_id: int | None) -> list[dict]:
    """What the tools of a graph refer to: stored secrets that must exist, published workflows of
    the owner that must not call back into this one, tool names unique on each agent, and URLs
    that are a refused address as written (a name is checked again on every request)."""
    issues = []
    nodes = analysis.nodes.values()
    named = {
        rn.node_id: [*getattr(rn.params, "secrets", []), *([rn.params.secret] if getattr(rn.params, "secret", None) else [])]
        for rn in nodes
    }
    wanted = sorted({name for names in named.values() for name in names})
    stored = tool_selectors.secret_names(owner_id=owner_id, names=wanted) if wanted else set()
    for node_id, names in named.items():
        for name in names:
            if name not in stored:
                field = "secret" if name == getattr(analysis.nodes[node_id].params, "secret", None) else "secrets"
                issues.append(issue(node_id, field, f"there is no secret named '{name}': add it on the Secrets page"))
    for rn in nodes:
        if rn.node_type.type == "tool.workflow":
            if problem := _called_workflow_problem(rn.params.workflow, owner_id=owner_id, caller=workflow_id):
                issues.append(issue(rn.node_id, "workflow", problem))
        url = getattr(rn.params, "url", None)
        if url and (problem := _literal_address_problem(url)):
            issues.append(issue(rn.node_id, "url", problem))
        names: dict[str, str] = {}
        for tool in analysis.attached(rn.node_id, "tools"):
            name = getattr(tool.params, "name", None)
            if name and name in names:
                issues.append(issue(tool.node_id, "name", f"'{names[name]}' is also named '{name}' on this agent: tool names must differ"))
            elif name:
                names[name] = tool.node_id
    return issues


def _called_workflow_problem(target: int, *, owner_id: int, caller: int | None) -> str | None:
    """Why a workflow tool cannot call ``target``: not the owner's published workflow, or a call
    that comes back to ``caller`` (following the published versions' workflow tools)."""
    from workflows.models import Workflow

    if target == caller:
        return "a workflow cannot call itself as a tool"
    workflow = Workflow.objects.filter(pk=target, owner_id=owner_id).select_related("published_version").first()
    if workflow is None:
        return f"workflow {target} is not one of yours"
    if workflow.published_version is None:
        return f"'{workflow.name}' is not published yet: publish it to call it as a tool"
    seen, queue = {target}, [workflow]
    while queue and len(seen) <= MAX_CALLED_WORKFLOWS:
        current = queue.pop()
        called = [
            rn.params.workflow for rn in version_analysis(current.published_version).nodes.values() if rn.node_type.type == "tool.workflow"
        ]
        if caller is not None and caller in called:
            return f"'{workflow.name}' calls this workflow back (through '{current.name}'): workflow tools must not loop"
        fresh = [pk for pk in called if pk not in seen]
        seen.update(fresh)
        queue += list(
            Workflow.objects.filter(pk__in=fresh, owner_id=owner_id, published_version__isnull=False).select_related("published_version")
        )
    return None


def _literal_address_problem(url: str) -> str | None:
    """A URL whose host is written as an address (not a name, not a template) that the network
    guard refuses. Names are not looked up here: every request resolves and checks them."""
    head = url.split("/", 3)[:3]
    if len(head) < 3 or "{" in "/".join(head):
        return None
    host = urlsplit("/".join(head)).hostname or ""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if host != "localhost":
            return None
    return netguard.url_problem("/".join(head) + "/")


_analysis_lock = threading.Lock()


@lru_cache(maxsize=256)
def _cached_analysis(version_id: int, graph_json: str) -> Analysis:
    return analyze(Graph.parse(json.loads(graph_json)))


def version_analysis(version: WorkflowVersion) -> Analysis:
    """Versions are immutable, so their analysis is computed once per process."""
    with _analysis_lock:
        return _cached_analysis(version.pk, json.dumps(version.graph, sort_keys=True))


def reply_nodes(version: WorkflowVersion) -> frozenset[str]:
    """The ``llm`` nodes whose output goes straight to an ``output`` node: their tokens are the
    reply as it is written. A visitor sees only these; intermediate models stay private."""
    analysis = version_analysis(version)
    return frozenset(
        edge.source
        for edge in analysis.edges
        if analysis.nodes[edge.source].node_type.type == "llm" and analysis.nodes[edge.target].node_type.type == "output"
    )


def trigger_node(version: WorkflowVersion, trigger_type: str) -> str | None:
    """The first (by id) ``trigger.<trigger_type>`` node of the version, or None."""
    analysis = version_analysis(version)
    for node_id in sorted(analysis.nodes):
        if analysis.nodes[node_id].node_type.type == f"trigger.{trigger_type}":
            return node_id
    return None
