"""Routers send the input down one named route; the node's output is its input, passed through."""

from __future__ import annotations

import re
from functools import lru_cache

import re2
from pydantic import Field, field_validator, model_validator

from engine.registry import FlowValue, NodeResult, NodeType, Params, Port, issue
from workflows.nodes.common import CpuBudget, ModelParams, joined_text
from workflows.nodes.llm import MEMORY_PORT, ask_model, memory_port_issues, remember

ROUTE_NAME = r"^[A-Za-z0-9_][A-Za-z0-9_ .-]{0,63}$"


class RouterNode(NodeType):
    category = "Routing"
    inputs = (Port("input"),)
    dynamic_outputs = "routes"

    def output_ports(self, params):
        return tuple(Port(route.name) for route in params.routes)

    def check(self, node_id, params, view):
        return [
            issue(node_id, "routes", f"route '{route.name}' is not connected to anything")
            for route in params.routes
            if not view.outgoing.get(route.name)
        ]

    def pass_through(self, inputs, route: str, details: dict) -> NodeResult:
        values = inputs.get("input", [])
        value = values[0] if len(values) == 1 else FlowValue(joined_text(inputs))
        return NodeResult(outputs={route: value}, details={"route": route, **details})


def _check_routes(routes, default_route):
    names = [r.name for r in routes]
    if len(set(names)) != len(names):
        raise ValueError("route names must be unique")
    if default_route not in names:
        raise ValueError(f"default_route '{default_route}' is not one of the routes")


class LLMRoute(Params):
    name: str = Field(..., pattern=ROUTE_NAME)
    description: str = Field("", max_length=2000)


class LLMRouter(RouterNode):
    type = "router.llm"
    label = "LLM router"
    description = "A model picks one of the named routes; the input passes through."
    inputs = (Port("input"), MEMORY_PORT)
    summary = ("{model}",)

    class Params(ModelParams):
        prompt: str = Field(
            "Classify the user's message into exactly one of the routes below.",
            max_length=20000,
            json_schema_extra={"format": "prompt"},
        )
        routes: list[LLMRoute] = Field(
            default_factory=lambda: [LLMRoute(name="general", description="anything else")], min_length=1, max_length=50
        )
        default_route: str = "general"
        temperature: float | None = Field(0.0, ge=0, le=2)

        @model_validator(mode="after")
        def _default_is_a_route(self):
            _check_routes(self.routes, self.default_route)
            return self

    def model_ref_of(self, params):
        return params.model_ref(max_tokens=20)

    def check(self, node_id, params, view):
        return super().check(node_id, params, view) + memory_port_issues(node_id, view)

    def run(self, ctx, inputs):
        params = ctx.params
        ref = self.model_ref_of(params)
        user_text = joined_text(inputs)
        route_lines = "\n".join(f"- {r.name}: {r.description}" if r.description else f"- {r.name}" for r in params.routes)
        system = (
            f"{params.prompt}\n\nRoutes:\n{route_lines}\n\n"
            f"Answer with the route name only, exactly as written, one of: {', '.join(r.name for r in params.routes)}."
        )
        bindings, result = ask_model(ctx, ref, system, user_text)
        route = choose_route(result.text, [r.name for r in params.routes], params.default_route)
        remember(ctx, bindings, user_text, route)
        return self.pass_through(inputs, route, {**result.details(), "model_answer": result.text})


def choose_route(answer: str, names: list[str], default: str) -> str:
    """The route the model named: an exact answer first, then a route named inside the answer."""
    cleaned = answer.strip().strip("\"'`.*").strip().lower()
    by_lower = {name.lower(): name for name in names}
    if cleaned in by_lower:
        return by_lower[cleaned]
    # The longest name first, so that "billing_urgent" wins over "billing".
    for name in sorted(names, key=len, reverse=True):
        if re.search(rf"(?<![\w-]){re.escape(name.lower())}(?![\w-])", answer.lower()):
            return name
    return default


class StaticRoute(Params):
    name: str = Field(..., pattern=ROUTE_NAME)
    match: str = Field("", max_length=2000, description="a keyword, /regex/, or payload.field=value; empty never matches")

    @field_validator("match")
    @classmethod
    def _valid_regex(cls, value: str) -> str:
        if _is_regex(value):
            route_regex(value[1:-1])  # a ValueError saying what RE2 cannot do
        return value


class StaticRouter(RouterNode):
    type = "router.static"
    label = "Rule router"
    description = "Routes by keyword, /regex/ or payload.field=value, with no model call."

    class Params(Params):
        routes: list[StaticRoute] = Field(default_factory=lambda: [StaticRoute(name="default", match="")], min_length=1, max_length=50)
        default_route: str = "default"

        @model_validator(mode="after")
        def _default_is_a_route(self):
            _check_routes(self.routes, self.default_route)
            return self

    def run(self, ctx, inputs):
        text = joined_text(inputs)
        budget = CpuBudget(f"{self.type} '{ctx.node_id}'")
        for route in ctx.params.routes:
            budget.check()
            if route_matches(route.match, text, ctx.payload):
                return self.pass_through(inputs, route.name, {})
        return self.pass_through(inputs, ctx.params.default_route, {})


# Route rules see the first MAX_MATCHED_CHARS of the input. Regexes run in RE2, whose matching
# time is linear in the text (no backtracking: a pattern like /^(\w+\s?)+$/ cannot freeze the
# process) and which releases the GIL while it matches.
MAX_MATCHED_CHARS = 20_000
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False
_RE2_OPTIONS.max_mem = 8 << 20  # bytes for one compiled pattern: huge repetitions fail to compile


def _is_regex(match: str) -> bool:
    return len(match) >= 2 and match.startswith("/") and match.endswith("/")


@lru_cache(maxsize=2048)
def route_regex(pattern: str):
    r"""``pattern`` compiled by RE2; ``ValueError`` with a reason a person can act on otherwise.

    RE2 takes Python's syntax except look-around, back-references and possessive or atomic groups;
    ``\w``, ``\d`` and ``\b`` are ASCII (use ``\pL`` for any letter)."""
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(
            f"this regular expression cannot be used: {reason} (routes match in linear time with RE2: "
            "no look-ahead/look-behind, back-references or comments)"
        ) from None


def route_matches(match: str, text: str, payload: dict) -> bool:
    if not match:
        return False
    text = text[:MAX_MATCHED_CHARS]
    if _is_regex(match):
        return route_regex(match[1:-1]).search(text) is not None
    if match.startswith("payload.") and "=" in match:
        path, expected = match[len("payload.") :].split("=", 1)
        value = payload
        for part in path.split("."):
            if not isinstance(value, dict) or part not in value:
                return False
            value = value[part]
        return str(value) == expected
    return re.search(rf"\b{re.escape(match.lower())}\b", text.lower()) is not None
