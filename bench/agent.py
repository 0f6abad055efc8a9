"""8. An agent turn with one tool round.

A chat turn (``POST /api/workflows/{id}/chat/``) of an agent: trigger.chat -> llm with one
``tool.http`` on its tools port -> output. The fake model answers a turn's first request with one
call of the tool and, once it has the tool's result, answers with text made of that result; the
tool is a small local HTTP API (tests/toolserver.py, answering at once). Embedded and full mode.

The baseline is a bare litellm tool loop from this process on the same fake model and tool API:
``litellm.completion(stream=True, tools=...)`` with the messages and tools Skein's turn sent, the
call it asks for made with an HTTP request, and a second completion with the call and its result
appended (as Skein appends them). Turns and loops alternate, which goes first alternating too.

Each pair gives:
- Skein's overhead: the turn − the loop's two model calls as a bare client makes them (what Skein
  spends on top of the model, the tool call included);
- the bare loop's own overhead: the loop − the fake server's time on its two requests (litellm's
  client work, the tool call and the glue between them);
and the goal is Skein's ≤ 1.5× the bare loop's (p50). Every turn must have answered with what the
tool returned, having sent that result to the model (checked on what the fake server received);
nothing about speed is asserted.
"""

from __future__ import annotations

import json
import re
import threading
import time

from . import stacks
from .bareclient import bare_stream
from .common import (
    Cleanup,
    Result,
    Row,
    alternating_pairs,
    api_client,
    api_token,
    check,
    create_workflow,
    fake_llm_class,
    log,
    ms,
    summarize,
)

NAME = "agent"
TITLE = "Agent turn with one tool round"
TURNS_PER_THREAD = 25
TOOL = "lookup_order"
ORDER_SCHEMA = {"type": "object", "properties": {"order": {"type": "integer"}}, "required": ["order"]}
GOAL_RATIO = 1.5
ASKED_ORDER = re.compile(r"order (\d+)")


def answer_of(order) -> str:
    return f"Order {order} is shipped."


def tool_result_of(order) -> dict:
    """What the tool API (tests/toolserver.py) answers for an order."""
    return {"order": str(order), "status": "shipped", "carrier": {"name": "Posta"}}


def respond(request):
    """The model: a call of the tool for the order the user asks about; with the tool's result, an
    answer made of it (so a result that did not reach the model shows in the answer)."""
    from tests.fakellm import Reply

    if not request.tool_results:
        asked = ASKED_ORDER.search(request.last_user)
        return Reply(tool_calls=[{"id": "call_1", "name": TOOL, "arguments": {"order": int(asked.group(1)) if asked else 0}}])
    content = request.tool_results[-1]["content"]
    try:
        result = json.loads(content)
        return Reply(text=answer_of(result["order"]) if result.get("status") == "shipped" else f"unexpected result: {content[:200]}")
    except (ValueError, KeyError, TypeError, AttributeError):
        return Reply(text=f"unexpected result: {content[:200]}")


def start_model():
    """The bench's fake model server, each request stamped with the server's time on it (from its
    arrival to its last byte written): ``request.served`` is set once it is."""
    base = fake_llm_class()

    class TimedModel(base):
        def __init__(self):
            super().__init__(record=True)
            self._handling = threading.local()  # the request this handler thread is answering

        def _record(self, request) -> None:
            request.served = threading.Event()
            request.server_s = None
            self._handling.request = request
            super()._record(request)

        def _handler_class(self):
            fake = self
            base_handler = super()._handler_class()

            class Handler(base_handler):
                def do_POST(self):
                    started = time.perf_counter()
                    fake._handling.request = None
                    try:
                        super().do_POST()
                    finally:
                        request = fake._handling.request
                        if request is not None:
                            request.server_s = time.perf_counter() - started
                            request.served.set()

            return Handler

    fake = TimedModel().start()
    fake.responder = respond
    return fake


def start_tool_api():
    """tests/toolserver.py's API, its answers sent without Nagle's delay (headers and body are two
    writes; the second would wait for the client's delayed ACK), as the fake model's are."""
    from tests.toolserver import ToolServer

    class Api(ToolServer):
        def _handler(self):
            handler = super()._handler()
            handler.disable_nagle_algorithm = True
            return handler

    return Api()


def server_seconds(requests) -> float:
    total = 0.0
    for request in requests:
        if not request.served.wait(10):
            raise RuntimeError("the fake model server never finished a request")
        total += request.server_s
    return total


def read_answer(response) -> tuple[str, list[dict]]:
    """A streamed answer read to its end: its text and the tool calls it asks for."""
    parts, calls = [], {}
    for chunk in response:
        choices = getattr(chunk, "choices", None) or []
        delta = choices[0].delta if choices else None
        if delta is None:
            continue
        if delta.content:
            parts.append(delta.content)
        for piece in getattr(delta, "tool_calls", None) or []:
            call = calls.setdefault(piece.index if piece.index is not None else len(calls), {"id": "", "name": "", "arguments": ""})
            call["id"] = piece.id or call["id"]
            if piece.function is not None:
                call["name"] = piece.function.name or call["name"]
                call["arguments"] += piece.function.arguments or ""
    return "".join(parts), [calls[index] for index in sorted(calls)]


class BareLoop:
    """The baseline: a litellm tool loop, one round of calls, without Skein around it."""

    def __init__(self, fake, tool_base: str):
        import httpx

        self.fake = fake
        self.tool_base = tool_base
        self.http = httpx.Client(timeout=30)  # kept connections, as Skein's tool client keeps them
        Cleanup.push("bare loop's HTTP client", self.http.close)

    def run(self, messages: list[dict], tools: list[dict]) -> dict:
        first_request = len(self.fake.requests)
        started = time.perf_counter()
        text, calls = read_answer(bare_stream(self.fake.base_url, messages, tools=tools))
        asked = time.perf_counter()
        sent = list(messages)
        sent.append({"role": "assistant", "content": text, "tool_calls": [_openai_call(c) for c in calls]})
        for call in calls:
            order = json.loads(call["arguments"])["order"]
            answer = self.http.get(f"{self.tool_base}/orders/{order}")
            answer.raise_for_status()
            sent.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(answer.json(), ensure_ascii=False)})
        called = time.perf_counter()
        reply, _ = read_answer(bare_stream(self.fake.base_url, sent, tools=tools))
        finished = time.perf_counter()
        requests = self.fake.requests[first_request:]
        if len(requests) != 2 or reply != answer_of(_asked_order(messages)):
            raise AssertionError(f"the bare loop went wrong: {len(requests)} model requests, answer {reply!r}")
        return {
            "loop": finished - started,
            "model": (asked - started) + (finished - called),
            "tool": called - asked,
            "server": server_seconds(requests),
            "second_messages": requests[1].messages,
        }


def _openai_call(call: dict) -> dict:
    return {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}


def _asked_order(messages: list[dict]) -> int:
    user = [m["content"] for m in messages if m.get("role") == "user"][-1]
    return int(ASKED_ORDER.search(user).group(1))


def measure(stack: stacks.Stack, fake, tool_api, *, turns: int, warmup: int, profile=None) -> tuple[dict, int]:
    """Alternating agent turns and bare loops: the raw times (seconds) of each pair, and in how many
    pairs the bare loop sent its second request the same messages as the turn."""
    from tests.graphs import agent_graph

    token = api_token(stack.base)
    client = api_client(stack.base, token)
    Cleanup.push("http client", client.close)
    tool = {
        "id": "lookup",
        "type": "tool.http",
        "name": TOOL,
        "description": "Look up an order by its number",
        "parameters": ORDER_SCHEMA,
        "url": tool_api.base + "/orders/{{ args.order }}",
    }
    workflow = create_workflow(client, fake.base_url, lambda provider: agent_graph(provider, [tool]), name=f"agent {stack.mode}")
    url = f"/api/workflows/{workflow['id']}/chat/"
    bare = BareLoop(fake, tool_api.base)
    state = {"thread": None, "count": 0}

    def turn() -> tuple[dict, list]:
        index = state["count"]
        state["count"] += 1
        if index % TURNS_PER_THREAD == 0:
            state["thread"] = None
        message = f"where is my order {index}?"
        first_request = len(fake.requests)
        started = time.perf_counter()
        response = client.post(url, json={"message": message, "thread": state["thread"]})
        elapsed = time.perf_counter() - started
        body = check(response)
        requests = [r for r in fake.requests[first_request:] if r.last_user == message]
        results = [r.tool_results for r in requests]
        expected = json.dumps(tool_result_of(index), ensure_ascii=False)
        if len(requests) != 2 or results[0] or [m["content"] for m in results[1]] != [expected]:
            raise AssertionError(f"turn {index}: the model was not sent the tool's result once: {results}")
        if (body.get("status"), body.get("reply")) != ("succeeded", answer_of(index)):
            raise AssertionError(f"turn {index}: unexpected answer: {body}")
        state["thread"] = body["thread"]
        return {"turn": elapsed, "server": server_seconds(requests)}, requests

    def loop(requests) -> dict:
        """The bare loop on the messages and tools of the turn's first request."""
        figures = bare.run(requests[0].messages, requests[0].body["tools"])
        figures["same_messages"] = figures.pop("second_messages") == requests[1].messages
        return figures

    pairs = alternating_pairs(turn, loop, pairs=turns, warmup=warmup, profile=profile)
    raw = {
        "turn": [t["turn"] for t, _ in pairs],
        "turn_server": [t["server"] for t, _ in pairs],
        **{("loop" if key == "loop" else f"loop_{key}"): [b[key] for _, b in pairs] for key in ("loop", "model", "tool", "server")},
    }
    same_messages = sum(b["same_messages"] for _, b in pairs)
    fake.requests.clear()
    raw["skein_overhead"] = [t - m for t, m in zip(raw["turn"], raw["loop_model"])]
    raw["bare_overhead"] = [b - s for b, s in zip(raw["loop"], raw["loop_server"])]
    raw["difference"] = [t - b for t, b in zip(raw["turn"], raw["loop"])]
    return raw, same_messages


def _breakdown(stats: dict, turns: int) -> str:
    return (
        f"bare loop p50: its model calls {stats['loop_model']['p50']:.1f} ms (the server's time on them "
        f"{stats['loop_server']['p50']:.1f} ms), the tool call {stats['loop_tool']['p50']:.1f} ms; Skein's turn − the "
        f"server's time on its two requests p50 {stats['turn']['p50'] - stats['turn_server']['p50']:.1f} ms; turn − loop "
        f"p50 {stats['difference']['p50']:.1f} ms, p90 {stats['difference']['p90']:.1f} ms; n={turns}"
    )


def run(quick: bool) -> Result:
    turns = 10 if quick else 200
    warmup = 2 if quick else 20
    result = Result(NAME, TITLE)
    fake = start_model()
    Cleanup.push("fake model server", fake.stop)
    tool_api = start_tool_api()
    Cleanup.push("tool API", tool_api.stop)
    import litellm  # noqa: F401  (the bare loop's import is not part of any call)

    figures, same = {}, {}
    notes = [
        "Skein's overhead: turn − the bare loop's two model calls (client side); the bare loop's: loop − the fake "
        "server's time on its two requests. Both include the tool's HTTP call.",
        "The fake server shares this process's GIL with the bare loop's client, so its time on the loop's requests "
        "includes waits for it: the loop's own overhead is understated, and the ratio errs against Skein.",
    ]
    for mode in ("embedded", "full"):
        with Cleanup.scope():
            stack, profile = stacks.latency_stack(mode, profile_as="agent")
            raw, same[mode] = measure(stack, fake, tool_api, turns=turns, warmup=warmup, profile=profile)
        stats = {key: summarize([ms(v) for v in values]) for key, values in raw.items()}
        figures[mode] = stats
        ratio = {q: stats["skein_overhead"][q] / stats["bare_overhead"][q] for q in ("p50", "p90")}
        log(
            f"agent {mode}: turn p50 {stats['turn']['p50']:.1f} ms, bare loop p50 {stats['loop']['p50']:.1f} ms "
            f"(model {stats['loop_model']['p50']:.1f}, tool {stats['loop_tool']['p50']:.1f}, server {stats['loop_server']['p50']:.1f}); "
            f"overhead p50 Skein {stats['skein_overhead']['p50']:.1f} ms vs bare {stats['bare_overhead']['p50']:.1f} ms "
            f"= {ratio['p50']:.2f}x (n={turns})"
        )
        for q in ("p50", "p90"):
            goal = q == "p50"
            result.rows += [
                Row(
                    f"agent turn, one tool round, {mode} ({q})",
                    stats["turn"][q],
                    stats["loop"][q],
                    "ms",
                    stats["turn"][q] / stats["loop"][q],
                    "Skein / bare loop",
                ),
                Row(
                    f"agent overhead, {mode} ({q}: turn − model calls | loop − server time)",
                    stats["skein_overhead"][q],
                    stats["bare_overhead"][q],
                    "ms",
                    ratio[q],
                    "Skein / bare loop",
                    f"≤ {GOAL_RATIO:g}× the bare loop's" if goal else "",
                    ratio[q] <= GOAL_RATIO if goal else None,
                    note=_breakdown(stats, turns) if goal else "",
                ),
            ]
        if same[mode] != turns:
            notes.append(f"{mode}: the bare loop's second request had other messages than Skein's in {turns - same[mode]} of {turns} pairs")
    result.details = {
        "turns_per_mode": turns,
        "warmup_turns": warmup,
        "turns_per_thread": TURNS_PER_THREAD,
        "full_mode_worker": "1 process, --pool threads --concurrency 8",
        "figures_ms": figures,
        "bare_second_request_same_messages": same,
        "notes": notes,
    }
    return result
