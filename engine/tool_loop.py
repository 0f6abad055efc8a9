"""A model that may call tools (docs/tools.md): it is sent the attached tools' functions, the calls
it asks for run (several at once when it asks for several), their results go back to it, and so on
until it answers in text or a bound is reached: ``max_rounds`` rounds of calls, each tool's own
time bound, and the whole loop's ``budget_s``. Past a bound the model is asked once more, with no
tool allowed, to answer with what it has, and the run carries a warning.

A tool that fails (an HTTP error, a timeout, arguments that do not match its schema, a tool the
model made up) answers the model with the error as its result: the turn goes on. What the loop
leaves for memory is each round as OpenAI's messages (the assistant's ``tool_calls`` and the
``tool`` results), with each tool's memory policy applied: ``keep`` (the result, cut to the tool's
``max_result_tokens``), ``call_only`` (the call, and a note in place of the result) or ``none``.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from engine.interfaces import LLMResult, ModelRef, ToolCall, ToolOutcome, ToolSpec
from engine.registry import NodeError

KEEP, CALL_ONLY, NONE = "keep", "call_only", "none"
MEMORY_POLICIES = (KEEP, CALL_ONLY, NONE)
OMITTED = "(the result of this call is not kept in memory)"
ANSWER_NOW = "No more tool calls are possible in this turn: answer now with what you have."
MAX_PARALLEL_CALLS = 8


@dataclass
class Tool:
    """One function of a tool node attached to the model."""

    node: object  # the tool node's ``NodeContext``
    spec: ToolSpec
    memory: str = KEEP
    max_result_tokens: int = 2000
    timeout_s: float = 30.0

    def call(self, arguments: dict, timeout: float) -> ToolOutcome:
        return self.node.resolved.node_type.tool_call(self.node, self.spec.name, arguments, timeout=timeout)


@dataclass
class CallRecord:
    call: ToolCall
    tool: Tool | None
    outcome: ToolOutcome
    duration_ms: int
    sent: str = ""  # what the model was sent back as the result


@dataclass
class LoopResult:
    result: LLMResult  # the final answer, with the usage of every round
    rounds: list[list[CallRecord]] = field(default_factory=list)
    remembered: list[dict] = field(default_factory=list)  # the rounds as memory keeps them
    warnings: list[str] = field(default_factory=list)


def tools_of(ctx) -> list[Tool]:
    """The functions of the tool nodes attached to ``ctx``'s node; a name offered twice keeps its
    first. A tool that cannot say what it offers (an MCP server that does not answer) is left out
    of the turn, and the run says so."""
    tools, seen = [], set()
    for node in ctx.attached_tools():
        params = node.params
        try:
            specs = node.resolved.node_type.tool_specs(node)
        except NodeError as exc:
            ctx.services.warn(node.node_id, f"{exc}; its tools were left out of this turn")
            continue
        for spec in specs:
            if spec.name in seen:
                continue
            seen.add(spec.name)
            tools.append(
                Tool(
                    node=node,
                    spec=spec,
                    memory=getattr(params, "memory", KEEP),
                    max_result_tokens=getattr(params, "max_result_tokens", 2000),
                    timeout_s=float(getattr(params, "timeout_s", 30.0)),
                )
            )
    return tools


def answer_with_tools(
    ctx, ref: ModelRef, messages: list[dict], tools: list[Tool], *, max_rounds: int, budget_s: float, call_first: bool = False
) -> LoopResult:
    """``call_first``: the first round must call a tool (``tool_choice`` "required"); later rounds
    are the model's choice."""
    services = ctx.services
    deadline = time.monotonic() + budget_s
    by_name = {tool.spec.name: tool for tool in tools}
    specs = [tool.spec for tool in tools]
    sent = list(messages)
    loop = LoopResult(result=LLMResult(text="", model=ref.model))
    usage = [0, 0, 0.0]
    forced = False
    while True:
        forced = forced or len(loop.rounds) >= max_rounds or time.monotonic() >= deadline
        if forced and loop.rounds:
            sent.append({"role": "system", "content": ANSWER_NOW})
        choice = "none" if forced else "required" if call_first and not loop.rounds else None
        result = services.call_model(ctx.node_id, ref, sent, tools=specs, tool_choice=choice)
        usage[0] += result.prompt_tokens
        usage[1] += result.completion_tokens
        usage[2] += result.cost
        if not result.tool_calls:
            break
        if forced:  # it asked for tools although none were allowed: its text is the answer
            loop.warnings.append("the model asked for a tool after the last allowed round; its text was taken as the answer")
            break
        records = _run_calls(ctx, result.tool_calls, by_name, deadline)
        loop.rounds.append(records)
        call_message = {"role": "assistant", "content": result.text, "tool_calls": [c.as_openai() for c in result.tool_calls]}
        sent.append(call_message)
        for record in records:
            record.sent = _result_text(ctx, ref, record)
            sent.append({"role": "tool", "tool_call_id": record.call.id, "content": record.sent})
        loop.remembered += _remembered(result.text, records)
        if len(loop.rounds) >= max_rounds:
            loop.warnings.append(f"the model used all {max_rounds} tool rounds of this turn; it was asked to answer with what it had")
        elif time.monotonic() >= deadline:
            loop.warnings.append(f"the tools used the turn's {budget_s:g} s; the model was asked to answer with what it had")
    result.prompt_tokens, result.completion_tokens, result.cost = usage[0], usage[1], usage[2]
    loop.result = result
    return loop


def _run_calls(ctx, calls: list[ToolCall], by_name: dict[str, Tool], deadline: float) -> list[CallRecord]:
    """Every call of one round, at once when there are several; none outlives its bound."""
    if len(calls) == 1:
        return [_run_call(ctx, calls[0], by_name, deadline)]
    pool = ThreadPoolExecutor(max_workers=min(len(calls), MAX_PARALLEL_CALLS), thread_name_prefix="skein-tool")
    try:
        futures = [(call, pool.submit(_run_call, ctx, call, by_name, deadline)) for call in calls]
        records = []
        for call, future in futures:
            tool = by_name.get(call.name)
            bound = _bound(tool, deadline)
            try:
                records.append(future.result(timeout=bound + 1.0))
            except FutureTimeout:  # the call's own bound should have ended it: it is left behind
                records.append(CallRecord(call, tool, ToolOutcome(content="", error=f"no answer within {bound:g} s"), int(bound * 1000)))
        return records
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _bound(tool: Tool | None, deadline: float) -> float:
    return max(0.1, min(tool.timeout_s if tool else 0.1, deadline - time.monotonic()))


def _run_call(ctx, call: ToolCall, by_name: dict[str, Tool], deadline: float) -> CallRecord:
    tool = by_name.get(call.name)
    tool_node = tool.node.node_id if tool else None
    ctx.services.tools.started(ctx.node_id, tool_node, call)
    started = time.monotonic()
    outcome = _outcome(tool, call, by_name, deadline)
    duration_ms = int((time.monotonic() - started) * 1000)
    ctx.services.tools.finished(ctx.node_id, tool_node, call, outcome, duration_ms)
    return CallRecord(call=call, tool=tool, outcome=outcome, duration_ms=duration_ms)


def _outcome(tool: Tool | None, call: ToolCall, by_name: dict[str, Tool], deadline: float) -> ToolOutcome:
    if tool is None:
        offered = ", ".join(sorted(by_name)) or "none"
        return ToolOutcome(content="", error=f"there is no tool named '{call.name[:100]}' (the tools are: {offered})")
    arguments, problem = arguments_of(call.arguments, tool.spec.parameters)
    if problem:
        return ToolOutcome(content="", error=problem)
    try:
        return tool.call(arguments, _bound(tool, deadline))
    except NodeError as exc:
        return ToolOutcome(content="", error=str(exc))
    except Exception as exc:  # a tool's bug is its call's failure, never the turn's
        return ToolOutcome(content="", error=f"{type(exc).__name__}: {exc}")


def arguments_of(text: str, schema: dict) -> tuple[dict, str | None]:
    """The arguments a model wrote, parsed and checked against the tool's JSON Schema: (arguments,
    None), or ({}, what is wrong with them)."""
    try:
        arguments = json.loads(text or "{}")
    except ValueError as exc:
        return {}, f"the arguments are not JSON: {exc}"
    if not isinstance(arguments, dict):
        return {}, "the arguments must be a JSON object"
    try:
        error = next(Draft202012Validator(schema).iter_errors(arguments), None)
    except SchemaError as exc:  # refused at save time; a schema that slipped through fails the call, not the turn
        return {}, f"the tool's parameters are not a JSON Schema: {exc.message}"
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(the arguments)"
        return {}, f"the arguments do not match the tool's schema at {where}: {error.message}"
    return arguments, None


def schema_problem(schema) -> str | None:
    """Why ``schema`` cannot describe a tool's arguments (a JSON Schema of an object), or None."""
    if not isinstance(schema, dict):
        return "must be a JSON Schema (an object)"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"is not a JSON Schema: {exc.message}"
    if schema.get("type", "object") != "object":
        return 'must describe an object ("type": "object"): a tool is called with named arguments'
    return None


def _result_text(ctx, ref: ModelRef, record: CallRecord) -> str:
    """What the model is sent as the call's result: its content, or its error, cut to the tool's
    ``max_result_tokens`` of the model's tokenizer."""
    outcome = record.outcome
    text = f"Error: {outcome.error}" + (f"\n{outcome.content}" if outcome.content else "") if outcome.error else outcome.content
    limit = record.tool.max_result_tokens if record.tool else 200
    cut, was_cut = ctx.services.tools.cut_to_tokens(ref, text, limit)
    return cut + ("\n(cut at the tool's max_result_tokens)" if was_cut else "")


def _remembered(text: str, records: list[CallRecord]) -> list[dict]:
    """One round as memory keeps it, each call by its tool's policy: kept, call only, or not at all."""
    kept = [r for r in records if (r.tool.memory if r.tool else KEEP) != NONE]
    if not kept:
        return [{"role": "assistant", "content": text}] if text else []
    messages = [{"role": "assistant", "content": text, "tool_calls": [r.call.as_openai() for r in kept]}]
    for record in kept:
        content = OMITTED if record.tool and record.tool.memory == CALL_ONLY else record.sent
        messages.append({"role": "tool", "tool_call_id": record.call.id, "content": content})
    return messages
