"""Reads, scoped to an owner: another user's tests and test runs simply do not exist (404)."""

from __future__ import annotations

from django.db.models import QuerySet

from conversation_tests.checks import MODEL_CALLING_TYPES, SummaryTarget, Targets, target_issues
from conversation_tests.models import ConversationTest, TestResult, TestRun, TestSettings
from engine.graph import Graph
from engine.validation import Analysis, analyze
from memory import selectors as memory_selectors
from memory.keys import history_key
from providers.models import Provider
from runs.models import Run, RunStep
from workflows.models import Workflow


def conversation_test_list(*, owner, workflow: Workflow) -> QuerySet[ConversationTest]:
    return ConversationTest.objects.filter(workflow=workflow, workflow__owner=owner)


def conversation_test_get(*, owner, test_id) -> ConversationTest | None:
    return ConversationTest.objects.filter(workflow__owner=owner, pk=test_id).select_related("workflow").first()


def conversation_test_run_list(*, owner, workflow: Workflow) -> QuerySet[TestRun]:
    return TestRun.objects.filter(workflow=workflow, workflow__owner=owner)


def conversation_test_run_get(*, owner, test_run_id) -> TestRun | None:
    return TestRun.objects.filter(workflow__owner=owner, pk=test_run_id).select_related("workflow").prefetch_related("results").first()


def publish_requires_passing(*, workflow: Workflow) -> bool:
    return TestSettings.objects.filter(workflow=workflow, publish_requires_passing=True).exists()


def last_results(*, tests: list[ConversationTest]) -> dict[int, TestResult]:
    """Each test's latest finished result (for the list's last verdicts)."""
    latest: dict[int, TestResult] = {}
    done = (TestResult.Status.PASSED, TestResult.Status.FAILED, TestResult.Status.ERROR)
    rows = TestResult.objects.filter(test__in=tests, status__in=done).select_related("test_run").order_by("test_id", "-id")
    for result in rows.only("id", "test_id", "status", "finished", "test_run__id", "test_run__version_number"):
        latest.setdefault(result.test_id, result)
    return latest


# --- what checks may name ---------------------------------------------------------------------------
def targets_of(*, analysis: Analysis, owner_id: int) -> Targets:
    targets = Targets(providers=dict(Provider.objects.filter(owner_id=owner_id).values_list("pk", "kind")))
    for node_id, rn in sorted(analysis.nodes.items()):
        node_type = rn.node_type.type
        targets.nodes[node_id] = node_type
        if node_type in MODEL_CALLING_TYPES:
            targets.model_nodes[node_id] = (rn.params.model, targets.providers.get(rn.params.provider))
        if node_type.startswith("memory."):
            kind = getattr(rn.params, "history", "global")
            name = {"global": "", "node": node_id}.get(kind, getattr(rn.params, "name", ""))
            names = [node_id] + ([name] if kind == "named" else [])
            for alias in names:
                targets.memories.setdefault(alias, node_type)
                if node_type == "memory.summary":
                    targets.summaries.setdefault(alias, SummaryTarget(node_id, kind, name, getattr(rn.params, "key", "thread")))
    # Node ids that are not even valid nodes still exist for the author: say what is wrong with them.
    for node_id, node in analysis.graph.nodes.items():
        targets.nodes.setdefault(node_id, node.type or "unknown")
    return targets


def graph_targets(*, graph: dict, owner_id: int) -> Targets:
    return targets_of(analysis=analyze(Graph.parse(graph)), owner_id=owner_id)


def conversation_test_errors(*, test: ConversationTest, targets: Targets) -> list[dict]:
    """Why this test cannot run against the workflow these targets describe (empty: it can)."""
    return target_issues(test.turns, targets)


# --- what a turn did ---------------------------------------------------------------------------------
def turn_sent(*, run: Run) -> dict[str, list[dict]]:
    """Exactly what each node's model was sent in this run (nodes that called one)."""
    steps = RunStep.objects.filter(run=run, messages__isnull=False).only("node", "messages")
    return {step.node: step.messages for step in steps}


def memory_summary(*, workflow_id: int, thread_id: int, run_id: int, target: SummaryTarget) -> str | None:
    """A summarizing memory's running summary as it stands (None: it has none yet). The one place
    conversation tests read summaries."""
    key = history_key(target.key_param, thread_id=thread_id, run_id=run_id)
    history = memory_selectors.history_find(workflow_id=workflow_id, kind=target.history_kind, name=target.history_name, key=key)
    if history is None:
        return None
    summary = memory_selectors.summary_for(history=history, memory_node=target.memory_node)
    text, _covers = memory_selectors.summary_state(history=history, summary=summary)
    return text or None


# --- comparing two runs -------------------------------------------------------------------------------
def conversation_test_run_compare(*, a: TestRun, b: TestRun) -> dict:
    """Two runs side by side: per test (matched by test, else by name) both verdicts and, turn by
    turn, both replies, with what changed."""

    def key(result: TestResult):
        return ("test", result.test_id) if result.test_id else ("name", result.name)

    left = {key(r): r for r in a.results.all()}
    right = {key(r): r for r in b.results.all()}
    order = list(left) + [k for k in right if k not in left]
    tests = []
    for k in order:
        ra, rb = left.get(k), right.get(k)
        turns_a, turns_b = (ra.turns if ra else []), (rb.turns if rb else [])
        script = (ra or rb).script
        turns = []
        for index in range(max(len(turns_a), len(turns_b), len(script))):
            ta = turns_a[index] if index < len(turns_a) else None
            tb = turns_b[index] if index < len(turns_b) else None
            message = (ta or tb or {}).get("message") or (script[index]["message"] if index < len(script) else "")
            reply_a, reply_b = (ta or {}).get("reply"), (tb or {}).get("reply")
            turns.append(
                {
                    "turn": index,
                    "message": message,
                    "a": _turn_side(ta),
                    "b": _turn_side(tb),
                    "reply_changed": reply_a != reply_b,
                    "verdict_changed": (ta or {}).get("status") != (tb or {}).get("status"),
                }
            )
        tests.append(
            {
                "test": (ra or rb).test_id,
                "name": (rb or ra).name,
                "a": _result_side(ra),
                "b": _result_side(rb),
                "verdict_changed": (ra.status if ra else None) != (rb.status if rb else None),
                "replies_changed": sum(1 for t in turns if t["reply_changed"]),
                "turns": turns,
            }
        )
    return {
        "a": _run_side(a),
        "b": _run_side(b),
        "verdicts_changed": sum(1 for t in tests if t["verdict_changed"]),
        "replies_changed": sum(t["replies_changed"] for t in tests),
        "tests": tests,
    }


def _run_side(run: TestRun) -> dict:
    return {
        "id": run.pk,
        "version": run.version_label,
        "status": run.status,
        "passed": run.passed,
        "failed": run.failed,
        "errors": run.errors,
    }


def _result_side(result: TestResult | None) -> dict | None:
    if result is None:
        return None
    return {"result": result.pk, "status": result.status, "error": result.error}


def _turn_side(turn: dict | None) -> dict | None:
    if turn is None:
        return None
    failed = [c for c in turn.get("checks", []) if c.get("status") != "passed"]
    return {"reply": turn.get("reply", ""), "status": turn.get("status"), "run": turn.get("run"), "failed_checks": failed}
