"""Runs an analysed graph (docs/runs.md#the-executor-walk).

Walks flow edges from the firing trigger in topological order, skips branches a router did not
choose, resolves resource ports (memory, llm) when a node runs (``context.NodeContext``), and reports each
step to the ``RunServices``. The nodes that ran and returned a ``NodeResult.reply`` (``output``)
give the reply.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

from engine.context import NodeContext
from engine.interfaces import RunServices
from engine.registry import FlowValue, NodeError, NodeResult, PortKind
from engine.validation import Analysis


class RunFailed(Exception):
    def __init__(self, node_id: str | None, message: str):
        super().__init__(message)
        self.node_id = node_id
        self.message = message


@dataclass
class ExecutionResult:
    reply: str
    replies: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    cut: bool = False  # a reply is a model's answer cut at its max_tokens


def execute(analysis: Analysis, *, trigger_id: str, input_value: FlowValue, services: RunServices) -> ExecutionResult:
    if analysis.issues:
        raise RunFailed(None, "the workflow has validation errors")
    trigger = analysis.nodes.get(trigger_id)
    if trigger is None or not trigger.node_type.is_trigger:
        raise RunFailed(trigger_id, f"'{trigger_id}' is not a trigger of this workflow")

    flow_in: dict[str, list] = defaultdict(list)
    flow_out: dict[str, list] = defaultdict(list)
    for edge in analysis.edges:
        if analysis.nodes[edge.source].outputs[edge.source_handle].kind == PortKind.FLOW:
            flow_in[edge.target].append(edge)
            flow_out[edge.source].append(edge)

    values: dict[tuple[str, str], FlowValue] = {}
    result = ExecutionResult(reply="")
    for node_id in analysis.flow_order:
        resolved = analysis.nodes.get(node_id)
        if resolved is None:
            continue
        node_type = resolved.node_type
        if node_type.is_trigger:
            if node_id != trigger_id:
                continue
            inputs = {"input": [input_value]}
        else:
            inputs: dict[str, list[FlowValue]] = defaultdict(list)
            for edge in flow_in[node_id]:
                value = values.get((edge.source, edge.source_handle))
                if value is not None:
                    inputs[edge.target_handle].append(value)
            if not inputs and not (node_type.runs_as_source and not flow_in[node_id] and flow_out[node_id]):
                continue

        ctx = NodeContext(node_id=node_id, resolved=resolved, analysis=analysis, services=services)
        input_text = "\n\n".join(v.text for vs in inputs.values() for v in vs)
        services.node_started(node_id, node_type.type, input_text)
        started = time.monotonic()
        try:
            outcome: NodeResult = node_type.run(ctx, dict(inputs))
        except NodeError as exc:
            _fail(services, node_id, node_type.type, str(exc), started)
        except RunFailed:
            raise
        except Exception as exc:  # a node bug must fail the run clearly, not hang it
            _fail(services, node_id, node_type.type, f"{type(exc).__name__}: {exc}", started)
        duration_ms = int((time.monotonic() - started) * 1000)
        for port, value in outcome.outputs.items():
            values[(node_id, port)] = value
        output_text = outcome.output_text
        if output_text is None:
            output_text = "\n\n".join(v.text for v in outcome.outputs.values())
        services.node_finished(node_id, node_type.type, output_text, outcome.step_details(), duration_ms)
        result.ran.append(node_id)
        if outcome.reply is not None:
            result.replies.append(outcome.reply)
            result.cut = result.cut or outcome.reply_cut

    result.reply = "\n\n".join(result.replies)
    return result


def _fail(services: RunServices, node_id: str, node_type: str, message: str, started: float):
    services.node_failed(node_id, node_type, message, int((time.monotonic() - started) * 1000))
    raise RunFailed(node_id, message)
