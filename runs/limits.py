"""Daily spend limits: per workflow, per widget visitor and per OpenAI-endpoint caller.

A limit is a number of tokens (prompt + completion) or a cost (litellm's prices) per day, counted
from midnight UTC over the runs of the day. It is checked once, when a turn starts and before any
model call (``turn_refusal``, called by ``turns.run_execute``): a turn whose spender has used
the day's allowance, or whose input alone would take it past its token allowance, is refused with
a message the visitor reads and a warning on the run. A turn that starts under the limit runs to
its end, so a day's use can pass a limit by at most the turn that crossed it.

Spenders: a widget visitor is its client address (``visitor:<address>``), an OpenAI-endpoint caller
the request's ``user`` (``caller:<user>``, else ``caller:token``). Every run counts for its
workflow's own limit, whatever started it (the test chat too: the bill is the same).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, Sum
from django.utils import timezone

from runs.models import Run
from workflows.models import Workflow

SCOPES = ("workflow", "visitor", "caller")
REFUSAL_PREFIX = "Daily limit reached: "
WARNING_CODE = "spend_limit"
_VISITOR_TEXT = {
    "workflow": "this assistant has used its allowance for today. Please try again tomorrow.",
    "visitor": "you have used your allowance with this assistant for today. Please try again tomorrow.",
    "caller": "this caller has used its allowance with this workflow for today. Try again tomorrow.",
}


@dataclass(frozen=True)
class Refusal:
    scope: str
    message: str  # for the visitor
    detail: str  # for the owner: which limit, how much was used


def spender_visitor(address: str) -> str:
    return f"visitor:{address or 'unknown'}"[:240]


def spender_caller(user: str | None) -> str:
    return f"caller:{user}"[:240] if user else "caller:token"


def limits_of(workflow: Workflow) -> dict:
    """Every scope, with ``tokens`` and ``cost`` (None: no limit)."""
    stored = workflow.spend_limits or {}
    return {scope: {"tokens": (stored.get(scope) or {}).get("tokens"), "cost": (stored.get(scope) or {}).get("cost")} for scope in SCOPES}


def limits_update(*, workflow: Workflow, limits: dict) -> Workflow:
    """Set the scopes given (a scope set to None, or with both values None, has no limit)."""
    merged = limits_of(workflow)
    for scope in SCOPES:
        if scope in limits:
            value = limits[scope] or {}
            merged[scope] = {"tokens": value.get("tokens"), "cost": value.get("cost")}
    workflow.spend_limits = {scope: value for scope, value in merged.items() if any(v is not None for v in value.values())}
    Workflow.objects.filter(pk=workflow.pk).update(spend_limits=workflow.spend_limits)
    return workflow


def day_start():
    return timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)


def usage_today(*, workflow_id: int, spender: str | None = None) -> dict:
    """Tokens, cost and runs of today's runs (of one spender, if given); ``refused`` turns."""
    runs = Run.objects.filter(workflow_id=workflow_id, created__gte=day_start())
    if spender is not None:
        runs = runs.filter(spender=spender)
    totals = runs.aggregate(
        prompt=Sum("prompt_tokens"),
        completion=Sum("completion_tokens"),
        cost=Sum("cost"),
        runs=Count("id"),
        refused=Count("id", filter=Q(error__startswith=REFUSAL_PREFIX)),
    )
    return {
        "tokens": (totals["prompt"] or 0) + (totals["completion"] or 0),
        "cost": round(totals["cost"] or 0.0, 6),
        "runs": totals["runs"],
        "refused": totals["refused"],
    }


def refusal(*, workflow: Workflow, spender: str, input_text: str) -> Refusal | None:
    """Why a turn of ``spender`` with this input may not start today, or None if it may."""
    limits = limits_of(workflow)
    scopes = [("workflow", None)]
    kind = spender.partition(":")[0] if spender else ""
    if kind in ("visitor", "caller"):
        scopes.append((kind, spender))
    input_tokens = None
    for scope, who in scopes:
        limit = limits[scope]
        if limit["tokens"] is None and limit["cost"] is None:
            continue
        used = usage_today(workflow_id=workflow.pk, spender=who)
        if limit["tokens"] is not None:
            if input_tokens is None:
                from memory.tokens import count_text

                input_tokens = count_text(input_text or "")
            if used["tokens"] + input_tokens > limit["tokens"]:
                return _refused(scope, f"{used['tokens']} of {limit['tokens']} tokens used today (this input: {input_tokens})")
        if limit["cost"] is not None and used["cost"] >= limit["cost"]:
            return _refused(scope, f"${used['cost']:.4f} of ${limit['cost']:.4f} spent today")
    return None


def _refused(scope: str, used: str) -> Refusal:
    return Refusal(
        scope=scope,
        message=REFUSAL_PREFIX + _VISITOR_TEXT[scope],
        detail=f"daily {scope} spend limit reached ({used}); the turn was refused before any model call",
    )


def turn_refusal(*, run: Run) -> str | None:
    """The one check at the start of a turn: the run's error if it is refused (its warning is
    added to ``run.warnings``), else None."""
    refused = refusal(workflow=run.workflow, spender=run.spender, input_text=run.input)
    if refused is None:
        return None
    from observability import metrics

    metrics.spend_refused(scope=refused.scope)
    run.warnings = [*(run.warnings or []), {"node": None, "message": refused.detail, "code": WARNING_CODE}]
    return refused.message


def is_refusal(error: str) -> bool:
    """Whether a run's error is a spend-limit refusal (its text is written for visitors)."""
    return (error or "").startswith(REFUSAL_PREFIX)
