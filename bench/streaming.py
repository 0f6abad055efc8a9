"""4. Streaming latency: the first token leaving the fake model server -> the first ``llm.token`` at a
WebSocket client of ``WS /ws/threads/{id}/`` (session cookie auth), through the Celery worker,
channels-redis and daphne (full mode).

The fake server runs in this process and stamps the moment it writes the first content chunk of
each streamed answer; the WebSocket client runs here too, so both times come from one clock.
Baseline: a bare ``litellm.completion(stream=True)`` client in this process, from the same stamp to
its first content chunk (the floor any client of this server pays). Turns and bare calls alternate.
"""

from __future__ import annotations

import json
import threading
import time

from . import stacks
from .bareclient import bare_stream
from .common import Cleanup, Result, Row, api_client, api_token, check, create_chatbot, log, ms, start_fake_llm, summarize

NAME = "streaming"
TITLE = "Streaming latency (first token to WebSocket client)"
GOAL_MS = 50.0
WORDS = " ".join(f"w{i}" for i in range(20))
TOKEN_DELAY = 0.01


def consumers_exist() -> bool:
    try:
        from config import routing  # noqa: F401
        from widget import consumers  # noqa: F401
    except ImportError:
        return False
    return hasattr(consumers, "ThreadConsumer")


def session_cookie(base: str) -> str:
    """Log in as the browser does (CSRF cookie + header), return the Cookie header for the socket."""
    import httpx

    from .common import PASSWORD, USERNAME

    with httpx.Client(base_url=base, timeout=60) as client:
        csrf = check(client.get("/api/auth/csrf/"))["csrftoken"]
        check(
            client.post(
                "/api/auth/login/", json={"username": USERNAME, "password": PASSWORD}, headers={"X-CSRFToken": csrf, "Referer": base + "/"}
            )
        )
        return "; ".join(f"{name}={value}" for name, value in client.cookies.items())


def bare_first_token(fake) -> float:
    """Seconds from the server's first-chunk stamp to this client's first content chunk."""
    index = len(fake.first_chunk_sent)
    response = bare_stream(fake.base_url, [{"role": "user", "content": "bare"}])
    first = None
    for chunk in response:
        if first is None and chunk.choices and chunk.choices[0].delta and chunk.choices[0].delta.content:
            first = time.monotonic()
    return first - fake.first_chunk_sent[index]


def run(quick: bool) -> Result:
    result = Result(NAME, TITLE)
    if not consumers_exist():
        result.status = "pending"
        result.message = "runs.consumers.ThreadConsumer does not exist yet: the benchmark is written against the contract"
        result.rows.append(Row("first token → WebSocket client, p50", "pending", None, "ms", goal=f"p50 ≤ {GOAL_MS:g} ms"))
        return result
    from websockets.sync.client import connect

    from tests.fakellm import Reply

    turns = 6 if quick else 100
    warmup = 2 if quick else 10
    fake = start_fake_llm(record=False)
    Cleanup.push("fake model server", fake.stop)
    fake.responder = lambda request: Reply(text=WORDS, token_delay=TOKEN_DELAY)

    stack = stacks.full(concurrency=8)
    token = api_token(stack.base)
    client = api_client(stack.base, token)
    Cleanup.push("http client", client.close)
    workflow = create_chatbot(client, fake.base_url, name="streaming")
    chat_url = f"/api/workflows/{workflow['id']}/chat/"
    thread = check(client.post(chat_url, json={"message": "open the thread"}))["thread"]
    cookie = session_cookie(stack.base)

    ws = connect(f"{stack.ws}/ws/threads/{thread}/", additional_headers={"Cookie": cookie}, open_timeout=30)
    Cleanup.push("websocket", ws.close)

    def one_turn(index: int) -> float:
        stamp_index = len(fake.first_chunk_sent)
        answer = {}

        def post():
            try:
                answer["body"] = check(client.post(chat_url, json={"message": f"stream {index}", "thread": thread}))
            except Exception as exc:  # reported below
                answer["error"] = exc

        sender = threading.Thread(target=post, daemon=True)
        sender.start()
        first_token = None
        run_id = None
        deadline = time.monotonic() + 60
        while True:
            message = json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            now = time.monotonic()
            kind, data = message.get("type"), message.get("data") or {}
            if kind == "run.started":
                run_id = data.get("run")
            elif kind == "llm.token" and first_token is None and data.get("run") == run_id:
                first_token = now
            elif kind in ("run.finished", "run.failed") and data.get("run") == run_id:
                break
        sender.join(timeout=60)
        if "error" in answer or first_token is None:
            raise RuntimeError(f"turn {index} failed: {answer.get('error')}, first token {first_token}")
        if answer["body"]["reply"] != WORDS:
            raise AssertionError(f"unexpected reply {answer['body']['reply']!r}")
        return first_token - fake.first_chunk_sent[stamp_index]

    import litellm  # noqa: F401

    for i in range(warmup):
        one_turn(-1 - i)
        bare_first_token(fake)
    skein, bare = [], []
    for i in range(turns):
        if i % 2:
            bare.append(bare_first_token(fake))
            skein.append(one_turn(i))
        else:
            skein.append(one_turn(i))
            bare.append(bare_first_token(fake))
    ws.close()
    s, b = summarize([ms(x) for x in skein]), summarize([ms(x) for x in bare])
    log(f"streaming: first token to WebSocket p50 {s['p50']:.1f} ms, p99 {s['p99']:.1f} ms; bare client p50 {b['p50']:.2f} ms")
    result.rows += [
        Row(
            "first token → WebSocket client (p50)",
            s["p50"],
            b["p50"],
            "ms",
            s["p50"] / b["p50"] if b["p50"] else None,
            "Skein / bare",
            f"p50 ≤ {GOAL_MS:g} ms",
            s["p50"] <= GOAL_MS,
            note=f"worker → channels-redis → daphne → /ws/threads/{{id}}/; baseline: bare litellm client's first chunk; n={turns}",
        ),
        Row("first token → WebSocket client (p99)", s["p99"], b["p99"], "ms", s["p99"] / b["p99"] if b["p99"] else None, "Skein / bare"),
    ]
    result.details = {
        "turns": turns,
        "token_delay_s": TOKEN_DELAY,
        "skein_ms": s,
        "bare_ms": b,
        "worker": "1 process, --pool threads --concurrency 8",
    }
    return result
