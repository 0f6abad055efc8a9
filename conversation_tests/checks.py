"""Check kinds (docs/conversation-tests.md#checks): what each one accepts, what it needs of the workflow, and its verdict.

A check is ``{kind: value}``, one kind per check. ``script_issues`` refuses scripts that are not
well formed (an unknown kind, a bad pattern, an empty script: a 400, keyed by turn and check);
``target_issues`` finds checks naming a node, memory or provider the workflow does not have (the
test is saved but cannot run, like a graph with errors). ``evaluate`` gives one check's verdict on
one finished turn. Nothing here touches the database: the turn's outcome is handed in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from conversation_tests.patterns import pattern_error, pattern_search
from memory.tokens import tokenizer_for

MAX_TEXT = 10_000
MAX_MESSAGE = 100_000
SHOWN_CHARS = 2000  # how much of a reply or summary a failure's detail quotes

PASSED, FAILED, ERROR = "passed", "failed", "error"
MODEL_CALLING_TYPES = ("llm", "router.llm")  # node types whose run step records what their model was sent


def issue(turn: int | None, check: int | None, field_name: str | None, message: str) -> dict:
    return {"turn": turn, "check": check, "field": field_name, "message": message}


def shown(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"


def sent_token_count(messages: list[dict], model: tuple[str, str | None] | None) -> int:
    """What a list of chat messages costs in tokens with that (model, provider kind)'s own
    tokenizer: the one place test checks count them."""
    tokenizer = tokenizer_for(*model) if model else tokenizer_for(None)
    return sum(tokenizer.count_message(m["role"], m["content"]) for m in messages)


# --- what a check sees ----------------------------------------------------------------------------
@dataclass
class SummaryTarget:
    memory_node: str
    history_kind: str
    history_name: str
    key_param: str


@dataclass
class Targets:
    """What checks may name in one version of a workflow."""

    nodes: dict[str, str] = field(default_factory=dict)  # node id -> type
    model_nodes: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # node id -> (model, provider kind)
    memories: dict[str, str] = field(default_factory=dict)  # memory node id or history name -> type
    summaries: dict[str, SummaryTarget] = field(default_factory=dict)
    providers: dict[int, str] = field(default_factory=dict)  # the owner's provider ids -> kind


@dataclass
class Verdict:
    status: str
    detail: str
    extra: dict = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0


@dataclass
class TurnOutcome:
    """One finished turn, as checks read it."""

    reply: str
    sent: dict[str, list[dict]]  # node id -> exactly what its model was sent (nodes that called one)
    models: dict[str, tuple[str, str | None]]  # node id -> (model, provider kind) it calls
    summary: Callable[[str], str | None]  # memory name -> its running summary now (None: none yet)
    judge: Callable[[dict], Verdict]  # a judge check's value -> its verdict


# --- the kinds ------------------------------------------------------------------------------------
class _Value(BaseModel):
    model_config = ConfigDict(extra="forbid")


Text = Field(..., min_length=1, max_length=MAX_TEXT)
Name = Field(..., min_length=1, max_length=100)


class CheckKind:
    kind: ClassVar[str]
    Value: ClassVar[type[_Value] | None] = None  # None: the value is a non-empty string

    def parse(self, raw: Any):
        if self.Value is None:
            if not isinstance(raw, str) or not raw:
                raise ValueError("expects a non-empty string")
            if len(raw) > MAX_TEXT:
                raise ValueError(f"at most {MAX_TEXT} characters")
            return raw
        if not isinstance(raw, dict):
            raise ValueError(f"expects an object with {', '.join(self.Value.model_fields)}")
        try:
            return self.Value.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ValueError(f"{where}: {first['msg']}" if where else first["msg"]) from None

    def value_issue(self, value) -> str | None:
        """A problem of a parsed value beyond its shape (a bad pattern)."""
        return None

    def target_issue(self, value, targets: Targets) -> str | None:
        return None

    def evaluate(self, value, outcome: TurnOutcome) -> Verdict:
        raise NotImplementedError


def _in_reply(text: str, reply: str) -> bool:
    """Reply checks ignore case, like reply_matches: models vary their capitals, not their facts."""
    return text.casefold() in reply.casefold()


class ReplyContains(CheckKind):
    kind = "reply_contains"

    def evaluate(self, value, outcome):
        if _in_reply(value, outcome.reply):
            return Verdict(PASSED, f"the reply contains {value!r}")
        return Verdict(FAILED, f"expected the reply to contain {value!r} (any case); the reply was {shown(outcome.reply)!r}")


class ReplyNotContains(CheckKind):
    kind = "reply_not_contains"

    def evaluate(self, value, outcome):
        if not _in_reply(value, outcome.reply):
            return Verdict(PASSED, f"the reply does not contain {value!r}")
        return Verdict(FAILED, f"expected the reply not to contain {value!r} (any case); the reply was {shown(outcome.reply)!r}")


class ReplyMatches(CheckKind):
    kind = "reply_matches"

    def value_issue(self, value):
        return pattern_error(value)

    def evaluate(self, value, outcome):
        if pattern_search(value, outcome.reply):
            return Verdict(PASSED, f"the reply matches /{value}/")
        return Verdict(FAILED, f"expected the reply to match /{value}/ (case-insensitive); the reply was {shown(outcome.reply)!r}")


class _NodeText(_Value):
    node: StrictStr = Name
    text: StrictStr = Text


class _SentCheck(CheckKind):
    def target_issue(self, value, targets):
        return node_issue(value.node, targets)


def node_issue(node: str, targets: Targets) -> str | None:
    if node not in targets.nodes:
        return f"the workflow has no node '{node}'"
    if node not in targets.model_nodes:
        return f"node '{node}' ({targets.nodes[node]}) calls no model: name an llm or router.llm node"
    return None


def _sent_extra(messages: list[dict]) -> dict:
    return {"sent": messages}


def _where_sent(messages: list[dict], text: str) -> str | None:
    """Where ``text`` first occurs in what a node was sent ("message 2 of 3, user"), or None."""
    for index, message in enumerate(messages, 1):
        if text in message["content"]:
            return f"message {index} of {len(messages)}, {message['role']}"
    return None


class SentContains(_SentCheck):
    kind = "sent_contains"
    Value = _NodeText

    def evaluate(self, value, outcome):
        messages = outcome.sent.get(value.node)
        if messages is None:
            return Verdict(FAILED, f"node '{value.node}' called no model this turn (it did not run), so it was not sent {value.text!r}")
        where = _where_sent(messages, value.text)
        if where:
            return Verdict(PASSED, f"node '{value.node}' was sent {value.text!r} ({where})")
        return Verdict(
            FAILED, f"node '{value.node}' was not sent {value.text!r}: see the {len(messages)} messages it was sent", _sent_extra(messages)
        )


class SentExcludes(_SentCheck):
    kind = "sent_excludes"
    Value = _NodeText

    def evaluate(self, value, outcome):
        messages = outcome.sent.get(value.node)
        where = _where_sent(messages, value.text) if messages is not None else None
        if where:
            return Verdict(FAILED, f"node '{value.node}' was sent {value.text!r} ({where})", _sent_extra(messages))
        unsent = " called no model this turn, so it" if messages is None else ""
        return Verdict(PASSED, f"node '{value.node}'{unsent} was not sent {value.text!r}")


class _NodeTokens(_Value):
    node: StrictStr = Name
    tokens: StrictInt = Field(..., ge=1, le=10_000_000)


class SentTokensAtMost(_SentCheck):
    kind = "sent_tokens_at_most"
    Value = _NodeTokens

    def evaluate(self, value, outcome):
        messages = outcome.sent.get(value.node)
        if messages is None:
            return Verdict(PASSED, f"node '{value.node}' called no model this turn (0 tokens sent)", {"tokens": 0})
        tokens = sent_token_count(messages, outcome.models.get(value.node))
        if tokens <= value.tokens:
            return Verdict(PASSED, f"node '{value.node}' was sent {tokens} tokens (at most {value.tokens})", {"tokens": tokens})
        return Verdict(
            FAILED,
            f"node '{value.node}' was sent {tokens} tokens, more than {value.tokens}",
            {"tokens": tokens, **_sent_extra(messages)},
        )


class _MemoryText(_Value):
    memory: StrictStr = Name
    text: StrictStr = Text


class SummaryContains(CheckKind):
    kind = "summary_contains"
    Value = _MemoryText

    def target_issue(self, value, targets):
        if value.memory in targets.summaries:
            return None
        if value.memory in targets.memories:
            return f"memory '{value.memory}' is a {targets.memories[value.memory]}: only a memory.summary keeps a summary"
        return f"the workflow has no memory '{value.memory}'"

    def evaluate(self, value, outcome):
        summary = outcome.summary(value.memory)
        if not summary:
            return Verdict(FAILED, f"memory '{value.memory}' has no summary yet (expected one containing {value.text!r})", {"summary": ""})
        if value.text in summary:
            return Verdict(PASSED, f"the summary of memory '{value.memory}' contains {value.text!r}", {"summary": shown(summary)})
        return Verdict(
            FAILED,
            f"expected the summary of memory '{value.memory}' to contain {value.text!r}; the summary is {shown(summary)!r}",
            {"summary": shown(summary)},
        )


class _Judge(_Value):
    rubric: StrictStr = Field(..., min_length=1, max_length=5000)
    model: StrictStr = Field(..., min_length=1, max_length=200)
    provider: StrictInt | None = Field(None, ge=1, le=2**63 - 1)


class Judge(CheckKind):
    kind = "judge"
    Value = _Judge

    def target_issue(self, value, targets):
        if value.provider is not None and value.provider not in targets.providers:
            return f"provider {value.provider} does not exist"
        return None

    def evaluate(self, value, outcome):
        return outcome.judge(value.model_dump())


KINDS: dict[str, CheckKind] = {
    kind.kind: kind()
    for kind in (ReplyContains, ReplyNotContains, ReplyMatches, SentContains, SentExcludes, SentTokensAtMost, SummaryContains, Judge)
}


# --- whole scripts --------------------------------------------------------------------------------
TURN_KEYS = {"message", "expect", "reference"}


def parse_check(raw) -> tuple[CheckKind, Any]:
    """(kind, parsed value) of a well-formed check (``ValueError`` otherwise)."""
    if not isinstance(raw, dict) or len(raw) != 1:
        raise ValueError(f"a check is an object with exactly one kind: one of {', '.join(KINDS)}")
    ((name, raw_value),) = raw.items()
    kind = KINDS.get(name)
    if kind is None:
        raise ValueError(f"unknown check kind '{name}': use one of {', '.join(KINDS)}")
    value = kind.parse(raw_value)
    problem = kind.value_issue(value)
    if problem:
        raise ValueError(problem)
    return kind, value


def script_issues(turns) -> list[dict]:
    """Every reason a script is not well formed, keyed by turn and check (empty: it is)."""
    max_turns, max_checks = settings.SKEIN_TEST_MAX_TURNS, settings.SKEIN_TEST_MAX_CHECKS
    if not isinstance(turns, list):
        return [issue(None, None, "turns", "turns must be a list of {message, expect}")]
    if not turns:
        return [issue(None, None, "turns", "a test needs at least one turn")]
    if len(turns) > max_turns:
        return [issue(None, None, "turns", f"a test has at most {max_turns} turns (this one has {len(turns)})")]
    issues = []
    for t, turn in enumerate(turns):
        if not isinstance(turn, dict):
            issues.append(issue(t, None, None, "a turn is an object {message, expect}"))
            continue
        for extra in sorted(set(turn) - TURN_KEYS):
            issues.append(issue(t, None, extra, f"unknown field '{extra}' (a turn has message, expect and reference)"))
        message = turn.get("message")
        if not isinstance(message, str) or not message.strip():
            issues.append(issue(t, None, "message", "each turn needs a message (non-empty text)"))
        elif len(message) > MAX_MESSAGE:
            issues.append(issue(t, None, "message", f"a message has at most {MAX_MESSAGE} characters"))
        reference = turn.get("reference", "")
        if not isinstance(reference, str) or len(reference) > MAX_MESSAGE:
            issues.append(issue(t, None, "reference", f"reference is text of at most {MAX_MESSAGE} characters"))
        expect = turn.get("expect", [])
        if not isinstance(expect, list):
            issues.append(issue(t, None, "expect", "expect must be a list of checks"))
            continue
        if len(expect) > max_checks:
            issues.append(issue(t, None, "expect", f"a turn has at most {max_checks} checks"))
            continue
        for c, raw in enumerate(expect):
            try:
                parse_check(raw)
            except ValueError as exc:
                name = next(iter(raw)) if isinstance(raw, dict) and len(raw) == 1 else None
                issues.append(issue(t, c, name, str(exc)))
    return issues


def normalized(turns: list[dict]) -> list[dict]:
    """A well-formed script as stored: each turn's message and checks as written, plus its reference."""
    result = []
    for turn in turns:
        entry = {"message": turn["message"], "expect": list(turn.get("expect", []))}
        if turn.get("reference"):
            entry["reference"] = turn["reference"]
        result.append(entry)
    return result


def target_issues(turns: list[dict], targets: Targets) -> list[dict]:
    """Checks of a well-formed script that name something this workflow version does not have."""
    issues = []
    for t, turn in enumerate(turns):
        for c, raw in enumerate(turn.get("expect", [])):
            kind, value = parse_check(raw)
            problem = kind.target_issue(value, targets)
            if problem:
                issues.append(issue(t, c, kind.kind, problem))
    return issues


def evaluate(raw: dict, outcome: TurnOutcome) -> tuple[dict, Verdict]:
    """One check's result on a finished turn (as stored and shown), and its verdict (with usage)."""
    kind, value = parse_check(raw)
    try:
        verdict = kind.evaluate(value, outcome)
    except Exception as exc:  # a check must never break the test run: it is an error, loudly
        verdict = Verdict(ERROR, f"the check could not be evaluated: {type(exc).__name__}: {exc}")
    return result_entry(raw, verdict), verdict


def result_entry(raw: dict, verdict: Verdict) -> dict:
    passed = {PASSED: True, FAILED: False}.get(verdict.status)
    entry = {"check": raw, "kind": next(iter(raw)), "passed": passed, "status": verdict.status, "detail": verdict.detail}
    entry.update(verdict.extra)
    return entry
