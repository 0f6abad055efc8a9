"""The engine on its own: validation and execution, with in-memory services (no database)."""

from __future__ import annotations

import pytest

from engine.executor import RunFailed, execute
from engine.graph import Graph, GraphShapeError
from engine.interfaces import LLMResult, MemoryContext
from engine.registry import FlowValue
from engine.validation import analyze, validate
from tests.graphs import edge, node


class NoMemory:
    def context(self, binding):
        return MemoryContext()

    def record(self, binding, entries):
        pass

    def replace(self, binding, messages):
        pass


class FakeServices:
    def __init__(self, answers=None, payload=None):
        self.payload = payload or {}
        self.memory = NoMemory()
        self.answers = answers or {}
        self.calls = []
        self.events = []

    def call_model(self, node_id, ref, messages):
        self.calls.append((node_id, ref.model, messages))
        answer = self.answers.get(node_id, f"answer of {node_id}")
        if isinstance(answer, Exception):
            raise answer
        return LLMResult(text=answer, model=ref.model)

    def node_started(self, node_id, node_type, input_text):
        self.events.append(("started", node_id))

    def node_finished(self, node_id, node_type, output_text, details, duration_ms):
        self.events.append(("finished", node_id, output_text))

    def node_failed(self, node_id, node_type, error, duration_ms):
        self.events.append(("failed", node_id, error))

    def warn(self, node_id, message):
        pass


def run(graph, message="hi", trigger="chat", **services_kwargs):
    services = FakeServices(**services_kwargs)
    analysis = analyze(Graph.parse(graph))
    assert analysis.issues == []
    result = execute(analysis, trigger_id=trigger, input_value=FlowValue(message), services=services)
    return result, services


def fields(issues):
    return {(i["node"], i["field"]) for i in issues}


ROUTER_GRAPH = {
    "nodes": [
        node("chat", "trigger.chat"),
        node(
            "router",
            "router.llm",
            model="router-model",
            routes=[{"name": "billing", "description": "money"}, {"name": "other"}],
            default_route="other",
        ),
        node("billing_bot", "llm", model="m"),
        node("other_bot", "llm", model="m"),
        node("out", "output"),
    ],
    "edges": [
        edge("chat", "router"),
        edge("router", "billing_bot", "billing"),
        edge("router", "other_bot", "other"),
        edge("billing_bot", "out"),
        edge("other_bot", "out"),
    ],
}


class TestValidation:
    def test_not_a_graph_is_a_shape_error(self):
        for raw in ([], "x", 3, {"nodes": {}}, {"nodes": [], "edges": "no"}):
            with pytest.raises(GraphShapeError):
                validate(raw)

    def test_a_valid_chatbot_has_no_issues(self):
        assert (
            validate(
                {"nodes": [node("t", "trigger.chat"), node("l", "llm"), node("o", "output")], "edges": [edge("t", "l"), edge("l", "o")]}
            )
            == []
        )

    def test_reports_every_problem_keyed_by_node_and_field(self):
        graph = {
            "nodes": [
                node("t", "trigger.chat"),
                node("x", "no.such.type"),
                node("l", "llm", temperature=7, bogus=1),
                node("o", "output"),
                node("lonely", "output"),
            ],
            "edges": [edge("t", "l"), edge("l", "o"), edge("l", "ghost")],
        }
        issues = validate(graph)
        found = fields(issues)
        assert ("x", "type") in found
        assert ("l", "temperature") in found
        assert ("l", "bogus") in found
        assert ("l", "edges") in found  # the edge to the missing node, reported on the node that exists
        assert ("lonely", "input") in found  # an output nothing reaches
        assert all({"node", "field", "message"} <= set(i) for i in issues)

    def test_no_trigger(self):
        issues = validate({"nodes": [node("l", "llm"), node("o", "output")], "edges": [edge("l", "o")]})
        assert any(i["node"] is None and "trigger" in i["message"] for i in issues)

    def test_cycle_in_flow_edges(self):
        graph = {
            "nodes": [node("t", "trigger.chat"), node("a", "template"), node("b", "template"), node("o", "output")],
            "edges": [edge("t", "a"), edge("a", "b"), edge("b", "a", "output", "input"), edge("b", "o")],
        }
        cyclic = {i["node"] for i in validate(graph) if "cycle" in i["message"]}
        assert cyclic == {"a", "b"}

    def test_wrong_port_kinds(self):
        graph = {
            "nodes": [node("t", "trigger.chat"), node("l", "llm"), node("o", "output"), node("m", "llm.model")],
            "edges": [edge("t", "l"), edge("l", "o"), edge("m", "l", "llm", "input"), edge("t", "l", "output", "memory")],
        }
        issues = validate(graph)
        assert ("l", "input") in fields(issues)
        assert ("l", "memory") in fields(issues)

    def test_unknown_handles(self):
        graph = {
            "nodes": [node("t", "trigger.chat"), node("o", "output")],
            "edges": [edge("t", "o", "nope", "input"), edge("t", "o", "output", "nah")],
        }
        assert {("t", "nope"), ("o", "nah")} <= fields(validate(graph))

    def test_route_with_no_edge_and_bad_default(self):
        graph = {
            "nodes": [
                node("t", "trigger.chat"),
                node("r", "router.static", routes=[{"name": "a", "match": "x"}, {"name": "b", "match": ""}], default_route="b"),
                node("o", "output"),
            ],
            "edges": [edge("t", "r"), edge("r", "o", "a")],
        }
        assert any(i["node"] == "r" and i["field"] == "routes" and "'b'" in i["message"] for i in validate(graph))
        graph["nodes"][1]["data"]["default_route"] = "zzz"
        assert any(i["node"] == "r" and "default_route" in i["message"] for i in validate(graph))

    def test_duplicate_node_ids(self):
        graph = {"nodes": [node("t", "trigger.chat"), node("t", "output")], "edges": []}
        assert any(i["node"] == "t" and "duplicate" in i["message"] for i in validate(graph))

    def test_summary_memory_external_without_model_is_an_error(self):
        graph = {
            "nodes": [node("t", "trigger.chat"), node("l", "llm"), node("o", "output"), node("m", "memory.summary", llm_source="external")],
            "edges": [edge("t", "l"), edge("l", "o"), edge("m", "l", "memory", "memory")],
        }
        assert ("m", "llm") in fields(validate(graph))
        graph["nodes"].append(node("cheap", "llm.model", model="cheap"))
        graph["edges"].append(edge("cheap", "m", "llm", "llm"))
        assert validate(graph) == []

    def test_memory_on_a_node_that_cannot_use_it(self):
        graph = {
            "nodes": [node("t", "trigger.chat"), node("tpl", "template"), node("o", "output"), node("m", "memory.buffer")],
            "edges": [edge("t", "tpl"), edge("tpl", "o"), edge("m", "tpl", "memory", "input")],
        }
        assert ("tpl", "input") in fields(validate(graph))

    def test_bad_cron_and_timezone(self):
        graph = {"nodes": [node("s", "trigger.schedule", cron="every day", timezone="Mars/Base")], "edges": []}
        found = fields(validate(graph))
        assert ("s", "cron") in found and ("s", "timezone") in found

    def test_template_syntax_error(self):
        graph = {
            "nodes": [node("t", "trigger.chat"), node("x", "template", template="{{ oops"), node("o", "output")],
            "edges": [edge("t", "x"), edge("x", "o")],
        }
        assert ("x", "template") in fields(validate(graph))

    def test_node_types_all_describe_themselves(self):
        from engine.registry import all_node_types

        names = {t.type for t in all_node_types()}
        assert names >= {
            "trigger.chat",
            "trigger.webhook",
            "trigger.schedule",
            "trigger.manual",
            "llm",
            "llm.model",
            "router.llm",
            "router.static",
            "template",
            "memory.buffer",
            "memory.window",
            "memory.summary",
            "output",
        }
        for node_type in all_node_types():
            described = node_type.describe()
            assert described["params_schema"]["type"] == "object"


class TestExecution:
    def test_chain_passes_text_along_in_order(self):
        graph = {
            "nodes": [node("chat", "trigger.chat"), node("a", "llm", model="m1", system_prompt="sys"), node("o", "output")],
            "edges": [edge("chat", "a"), edge("a", "o")],
        }
        result, services = run(graph, "hello", answers={"a": "hi there"})
        assert result.reply == "hi there"
        assert services.calls == [("a", "m1", [{"role": "system", "content": "sys"}, {"role": "user", "content": "hello"}])]
        assert [e[:2] for e in services.events] == [
            ("started", "chat"),
            ("finished", "chat"),
            ("started", "a"),
            ("finished", "a"),
            ("started", "o"),
            ("finished", "o"),
        ]

    def test_router_runs_only_the_chosen_branch(self):
        result, services = run(ROUTER_GRAPH, "my invoice is wrong", answers={"router": "billing", "billing_bot": "billing answer"})
        assert result.reply == "billing answer"
        called = [c[0] for c in services.calls]
        assert called == ["router", "billing_bot"]
        # the router passes its input through, not its model's answer
        assert services.calls[1][2][-1] == {"role": "user", "content": "my invoice is wrong"}

    def test_router_answer_naming_no_route_takes_the_default(self):
        result, services = run(ROUTER_GRAPH, "hm", answers={"router": "I am not sure", "other_bot": "fallback"})
        assert result.reply == "fallback"
        assert "other_bot" in [c[0] for c in services.calls]

    def test_router_model_is_told_the_route_names(self):
        _, services = run(ROUTER_GRAPH, "x", answers={"router": "other"})
        system = services.calls[0][2][0]["content"]
        assert "billing" in system and "other" in system

    @pytest.mark.parametrize(
        "answer,expected",
        [
            ("billing", "billing"),
            (" Billing. ", "billing"),
            ("The route is: billing", "billing"),
            ("`other`", "other"),
            ("nonsense", "other"),
        ],
    )
    def test_choose_route(self, answer, expected):
        from workflows.nodes.router import choose_route

        assert choose_route(answer, ["billing", "other"], "other") == expected

    def test_static_router_keyword_regex_and_payload(self):
        graph = {
            "nodes": [
                node("chat", "trigger.chat"),
                node(
                    "r",
                    "router.static",
                    routes=[
                        {"name": "vip", "match": "payload.tier=gold"},
                        {"name": "refund", "match": "/refund(s)?\\b/"},
                        {"name": "hello", "match": "hello"},
                        {"name": "rest", "match": ""},
                    ],
                    default_route="rest",
                ),
                *[node(f"t_{n}", "template", template=f"{n}: {{{{ input }}}}") for n in ("vip", "refund", "hello", "rest")],
                node("o", "output"),
            ],
            "edges": [edge("chat", "r")]
            + [edge("r", f"t_{n}", n) for n in ("vip", "refund", "hello", "rest")]
            + [edge(f"t_{n}", "o") for n in ("vip", "refund", "hello", "rest")],
        }
        assert run(graph, "any", payload={"tier": "gold"})[0].reply == "vip: any"
        assert run(graph, "I want refunds")[0].reply == "refund: I want refunds"
        assert run(graph, "Hello there")[0].reply == "hello: Hello there"
        assert run(graph, "othello")[0].reply == "rest: othello"  # keywords match whole words

    def test_template_sees_input_and_payload_but_no_internals(self):
        graph = {
            "nodes": [
                node("chat", "trigger.chat"),
                node("t", "template", template="{{ payload.user.name }} said {{ input|upper }}"),
                node("o", "output"),
            ],
            "edges": [edge("chat", "t"), edge("t", "o")],
        }
        assert run(graph, "hi", payload={"user": {"name": "Ann"}})[0].reply == "Ann said HI"
        graph["nodes"][1]["data"]["template"] = "{{ input.__class__.__mro__ }}"
        with pytest.raises(RunFailed):
            run(graph, "hi")

    def test_a_failing_model_fails_the_step_and_the_run(self):
        from engine.registry import NodeError

        graph = {
            "nodes": [node("chat", "trigger.chat"), node("a", "llm"), node("o", "output")],
            "edges": [edge("chat", "a"), edge("a", "o")],
        }
        with pytest.raises(RunFailed) as failure:
            run(graph, answers={"a": NodeError("model exploded")})
        assert failure.value.node_id == "a" and "exploded" in failure.value.message

    def test_only_the_firing_trigger_runs(self):
        graph = {
            "nodes": [
                node("chat", "trigger.chat"),
                node("manual", "trigger.manual"),
                node("a", "template", template="chat {{ input }}"),
                node("b", "template", template="manual {{ input }}"),
                node("o", "output"),
            ],
            "edges": [edge("chat", "a"), edge("manual", "b"), edge("a", "o"), edge("b", "o")],
        }
        assert run(graph, "x", trigger="manual")[0].reply == "manual x"
        assert run(graph, "x", trigger="chat")[0].reply == "chat x"

    def test_invalid_graph_does_not_run(self):
        analysis = analyze(Graph.parse({"nodes": [node("o", "output")], "edges": []}))
        with pytest.raises(RunFailed):
            execute(analysis, trigger_id="o", input_value=FlowValue("x"), services=FakeServices())
