"""Graph analysis as the app uses it: a graph's problems for its owner, and the analysis of a
published or snapshotted version, computed once per process (versions are immutable)."""

from __future__ import annotations

import json
import threading
from functools import lru_cache

from core.errors import DomainError
from engine.graph import Graph
from engine.registry import issue
from engine.validation import Analysis, analyze, analyze_raw
from providers.models import Provider
from workflows.models import WorkflowVersion


class InvalidWorkflow(DomainError):
    """A graph that cannot be published or run: ``issues`` are ``{node, field, message}`` (HTTP 400)."""

    def __init__(self, issues: list[dict]):
        super().__init__("the workflow has errors")
        self.issues = issues

    def body(self) -> dict:
        return {"detail": self.message, "errors": self.issues}


def graph_issues(*, graph, owner) -> list[dict]:
    """Every problem of a graph for this owner: the engine's checks, plus the providers its models
    name (they must be the owner's) and credentials for each model (a key stored or in the environment).

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
    return issues


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
