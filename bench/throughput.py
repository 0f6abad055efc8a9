"""3. Throughput: many concurrent conversations against the full stack.

200 conversations (each its own chat thread) send turn after turn to ``POST /api/workflows/{id}/chat/``
as fast as the answers come back; the fake model (in a process of its own) takes 500 ms to answer.
After a warm-up, turns completed in a fixed window give turns/s; latency is each turn's request to
response time (turns that finished in the window). Then every transcript is read back
(``GET /api/threads/{id}/messages/``) and checked against what was sent: each acknowledged message
exactly once, in order, followed by its reply.

Sizing for 2 cores: Celery thread pools in 2 processes (one per core, so one GIL is not the limit),
30 threads each: at most 60 turns in flight, i.e. at most 120 turns/s at 500 ms per model call.

PostgreSQL: each run gets a private server started by the bench, so that exhausting its connections
disturbs nobody else's tests; with ``max_connections`` 500 (throughput without that limit) and 100
(PostgreSQL's default: what a stock deployment sees).

Baseline: the worker's parallelism without Skein -- 2 processes x 30 threads calling
``litellm.completion(stream=True)`` against the same fake server (bench/bareclient.py).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter

from . import stacks
from .common import (
    PROFILE,
    Cleanup,
    CpuMeter,
    FakeServerProcess,
    Result,
    Row,
    api_client,
    api_token,
    check,
    create_chatbot,
    log,
    ms,
    run_timeline,
    summarize,
    temp_dir,
)

NAME = "throughput"
TITLE = "Throughput, full stack"
GOAL = 100.0


async def _conversations(count: int, duration: float, warmup: float, send) -> dict:
    """``count`` loops calling ``send(conversation, turn)`` until the window ends; times per turn."""
    started = time.monotonic()
    window_start, window_end = started + warmup, started + warmup + duration
    records = []  # (conversation, turn, start, end, ok, detail)

    async def loop(conversation: int):
        turn = 0
        while time.monotonic() < window_end:
            t0 = time.monotonic()
            try:
                ok, detail = await send(conversation, turn)
            except Exception as exc:  # noqa: BLE001 (a failed turn is a figure, not a crash)
                ok, detail = False, f"{type(exc).__name__}: {exc}"[:300]
            records.append((conversation, turn, t0, time.monotonic(), ok, detail))
            turn += 1
            if not ok:
                await asyncio.sleep(0.2)

    await asyncio.gather(*(loop(c) for c in range(count)))
    finished = [r for r in records if r[4] and window_start <= r[3] < window_end]
    latencies = [r[3] - r[2] for r in finished]
    return {
        "records": records,
        "turns_in_window": len(finished),
        "turns_per_s": len(finished) / duration,
        "latency_ms": summarize([ms(x) for x in latencies]),
        "errors": Counter(r[5] for r in records if not r[4]),
        "drain_s": time.monotonic() - window_end,
        "window_start": window_start,
    }


def _baseline(base_url: str, processes: int, threads: int, duration: float, warmup: float, fake_pid: int) -> dict:
    """``processes`` x ``threads`` bare litellm clients (bench/bareclient.py), the worker's parallelism."""
    import json
    import subprocess

    from .common import PYTHON, ROOT

    procs = []
    try:
        for index in range(processes):
            procs.append(
                subprocess.Popen(
                    [
                        PYTHON,
                        "-m",
                        "bench.bareclient",
                        "--base-url",
                        base_url,
                        "--threads",
                        str(threads),
                        "--warmup",
                        str(warmup),
                        "--window",
                        str(duration),
                        "--offset",
                        str(index * threads),
                    ],
                    cwd=ROOT,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    start_new_session=True,
                )
            )
        for proc in procs:
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError("a bare client did not start")
        start_at = time.time() + 0.5
        meter = CpuMeter({**{f"bare client {i + 1}": p.pid for i, p in enumerate(procs)}, "fake model": fake_pid}, include_self=False)
        import threading

        threading.Timer(0.5 + warmup, meter.start).start()
        threading.Timer(0.5 + warmup + duration, meter.stop).start()
        for proc in procs:
            proc.stdin.write(f"{start_at}\n")
            proc.stdin.flush()
        outputs = [json.loads(proc.communicate(timeout=warmup + duration + 300)[0]) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    records = [r for out in outputs for r in out["records"]]
    finished = [r for r in records if r[2] and warmup <= r[1] < warmup + duration]
    return {
        "turns_in_window": len(finished),
        "turns_per_s": len(finished) / duration,
        "latency_ms": summarize([ms(r[1] - r[0]) for r in finished]),
        "errors": Counter("failed" for r in records if not r[2]),
        "cpu_ms_per_turn": {k: 1000 * v / max(1, len(finished)) for k, v in meter.used.items()},
    }


def _skein(stack, workflow_id: int, token: str, conversations: int, duration: float, warmup: float) -> tuple[dict, dict]:
    import httpx

    threads: dict[int, int] = {}
    acked: dict[int, list[str]] = {c: [] for c in range(conversations)}
    runs: dict[tuple[int, int], tuple[int, float, float]] = {}  # (conversation, turn) -> (run, wall sent, wall answered)

    async def main():
        # One client (one keep-alive connection) per conversation: a single client's connection pool
        # spends CPU quadratic in its connections (httpcore), which made the load generator, not
        # Skein, the bottleneck at 200 conversations.
        clients = [
            httpx.AsyncClient(
                base_url=stack.base,
                headers={"Authorization": f"Token {token}"},
                limits=httpx.Limits(max_connections=1),
                timeout=httpx.Timeout(300.0, connect=30.0),
            )
            for _ in range(conversations)
        ]
        try:

            async def send(conversation: int, turn: int):
                message = f"c{conversation} t{turn}"
                sent_at = time.time()
                response = await clients[conversation].post(
                    f"/api/workflows/{workflow_id}/chat/", json={"message": message, "thread": threads.get(conversation)}
                )
                answered_at = time.time()
                if response.status_code != 200:
                    return False, f"HTTP {response.status_code}: {response.text[:150]}"
                body = response.json()
                runs[(conversation, turn)] = (body["run"], sent_at, answered_at)
                threads.setdefault(conversation, body["thread"])
                if body["thread"] != threads[conversation]:
                    return False, "answered on another thread"
                acked[conversation].append(message)
                if body.get("status") != "succeeded" or body.get("reply") != f"echo: {message}":
                    return False, f"turn {body.get('status')}: {body.get('error') or body.get('reply')}"[:200]
                return True, ""

            return await _conversations(conversations, duration, warmup, send)
        finally:
            await asyncio.gather(*(client.aclose() for client in clients))

    figures = asyncio.run(main())
    return figures, {"threads": threads, "acked": acked, "runs": runs}


def _timeline(stack, token: str, sent: dict, records, *, warmup_end: float, sample: int = 150) -> dict:
    chosen = [sent["runs"][(r[0], r[1])] for r in records if r[4] and r[2] >= warmup_end and (r[0], r[1]) in sent["runs"]]
    step = max(1, len(chosen) // sample)
    with api_client(stack.base, token, timeout=60) as client:
        return run_timeline(client, chosen[::step])


def _check_transcripts(stack, token: str, sent: dict, records) -> dict:
    """Every acknowledged message exactly once, in order, each followed by its reply; nothing else."""
    attempted: dict[int, list[str]] = {}
    for conversation, turn, *_ in sorted(records, key=lambda r: (r[0], r[1])):
        attempted.setdefault(conversation, []).append(f"c{conversation} t{turn}")
    lost = duplicated = unexpected = out_of_order = missing_reply = 0
    examples = []
    with api_client(stack.base, token, timeout=120) as client:
        for conversation, thread in sent["threads"].items():
            messages = check(client.get(f"/api/threads/{thread}/messages/"))
            users = [m["content"] for m in messages if m["role"] == "user"]
            counts = Counter(users)
            for message in sent["acked"][conversation]:
                if counts[message] == 0:
                    lost += 1
                    examples.append(f"lost {message}")
            duplicated += sum(n - 1 for n in counts.values() if n > 1)
            allowed = set(attempted.get(conversation, []))
            unexpected += sum(1 for u in counts if u not in allowed)
            order = [u for u in users if u in allowed]
            if order != sorted(order, key=lambda s: int(s.rsplit("t", 1)[1])):
                out_of_order += 1
                examples.append(f"out of order on thread {thread}")
            for index, m in enumerate(messages):
                if m["role"] == "user":
                    reply = messages[index + 1] if index + 1 < len(messages) else None
                    if not reply or reply["role"] != "assistant" or reply["content"] != f"echo: {m['content']}":
                        missing_reply += 1
                        examples.append(f"no reply after {m['content']} on thread {thread}")
    return {
        "threads_checked": len(sent["threads"]),
        "acknowledged": sum(len(v) for v in sent["acked"].values()),
        "lost": lost,
        "duplicated": duplicated,
        "unexpected": unexpected,
        "threads_out_of_order": out_of_order,
        "user_messages_without_reply": missing_reply,
        "examples": examples[:10],
    }


def _measure(
    *, max_connections: int, conversations: int, latency: float, duration: float, warmup: float, processes: int, threads: int, fake
) -> dict:
    """One Skein run on a private PostgreSQL with ``max_connections``: figures, audit, peak connections."""
    import threading

    from .pgcluster import PrivatePostgres

    with Cleanup.scope():
        pg = PrivatePostgres(max_connections=max_connections)
        stack = stacks.full(concurrency=threads, worker_processes=processes, database_url=pg.url)
        token = api_token(stack.base)
        with api_client(stack.base, token) as client:
            workflow = create_chatbot(
                client, fake.base_url, memory={"type": "memory.window", "max_tokens": 2000, "max_messages": None}, name="throughput"
            )
        peak = {"connections": 0}
        stop = threading.Event()

        def sample():
            while not stop.wait(0.5):
                try:
                    peak["connections"] = max(peak["connections"], pg.connections())
                except Exception:  # the server may be out of connections itself
                    peak["connections"] = max(peak["connections"], max_connections)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        log(f"throughput: {conversations} conversations for {warmup + duration:.0f}s (PostgreSQL max_connections={max_connections})")
        meter = CpuMeter({**{p.name: p.proc.pid for p in stack.processes}, "postgres": pg.proc.pid, "fake model": fake.proc.pid})
        threading.Timer(warmup, meter.start).start()
        threading.Timer(warmup + duration, meter.stop).start()
        profile = None
        if PROFILE["enabled"]:
            from .profiling import PySpy

            profile = PySpy({f"throughput-{max_connections}-{p.name}": p.proc.pid for p in stack.processes})
            threading.Timer(warmup, profile.start).start()
        try:
            skein, sent = _skein(stack, workflow["id"], token, conversations, duration, warmup)
        finally:
            stop.set()
            sampler.join()
            if profile:
                profile.stop()
        log(
            f"throughput: {skein['turns_per_s']:.1f} turns/s, p50 {skein['latency_ms'].get('p50', 0):.0f} ms, "
            f"errors {sum(skein['errors'].values())}, peak {peak['connections']} connections; checking transcripts"
        )
        time.sleep(2.0)  # let turns whose client gave up finish, so the check sees a quiet system
        audit = _check_transcripts(stack, token, sent, skein["records"])
        log(f"throughput: transcripts {audit}")
        logs = {p.name: _log_errors(p.log_path) for p in stack.processes}
        try:
            timeline = _timeline(stack, token, sent, skein["records"], warmup_end=skein["window_start"])
            log("throughput: turn timeline p50: " + ", ".join(f"{k.strip()} {v.get('p50', 0):.0f} ms" for k, v in timeline.items()))
        except Exception as exc:  # a diagnostic: never fail the benchmark for it
            timeline = {"error": repr(exc)}
    cpu_ms_per_turn = {k: 1000 * v / max(1, skein["turns_in_window"]) for k, v in meter.used.items()}
    log("throughput: CPU per turn: " + ", ".join(f"{k} {v:.0f} ms" for k, v in cpu_ms_per_turn.items()))
    return {
        "skein": skein,
        "audit": audit,
        "peak_connections": peak["connections"],
        "log_errors": logs,
        "timeline_ms": timeline,
        "cpu_s_in_window": meter.used,
        "cpu_ms_per_turn": cpu_ms_per_turn,
    }


def _log_errors(path) -> dict:
    """The most frequent error lines of a process log."""
    counts = Counter()
    for line in path.read_text(errors="replace").splitlines():
        if "Error:" in line or "FATAL" in line:
            counts[line.strip()[-200:]] += 1
    return dict(counts.most_common(5))


def run(quick: bool) -> Result:
    conversations = 20 if quick else 200
    latency = 0.2 if quick else 0.5
    duration = 4.0 if quick else 60.0
    warmup = 2.0 if quick else 15.0
    processes, threads = (1, 8) if quick else (2, 30)
    limits = (100,) if quick else (500, 100)
    override = os.environ.get("SKEIN_BENCH_THROUGHPUT")  # "conversations,latency_s,window_s,warmup_s,processes,threads"
    if override:
        c, lat, win, warm, procs, thr = override.split(",")
        conversations, latency, duration, warmup, processes, threads = int(c), float(lat), float(win), float(warm), int(procs), int(thr)
    if os.environ.get("SKEIN_BENCH_THROUGHPUT_LIMITS"):  # e.g. "500" or "500,100"
        limits = tuple(int(x) for x in os.environ["SKEIN_BENCH_THROUGHPUT_LIMITS"].split(","))
    result = Result(NAME, TITLE)

    fake = FakeServerProcess(delay=latency, text="", log_dir=temp_dir("skein-bench-fake-"))
    Cleanup.push("fake model server process", fake.stop)

    log(f"throughput baseline: {processes} x {threads} bare litellm.completion clients, {latency * 1000:.0f} ms model")
    base = _baseline(fake.base_url, processes, threads, duration, warmup, fake.proc.pid)
    log(
        f"throughput baseline: {base['turns_per_s']:.1f} turns/s, p50 {base['latency_ms'].get('p50', 0):.0f} ms; CPU per call: "
        + ", ".join(f"{k} {v:.0f} ms" for k, v in base["cpu_ms_per_turn"].items())
    )

    runs = {}
    for max_connections in limits:
        runs[max_connections] = _measure(
            max_connections=max_connections,
            conversations=conversations,
            latency=latency,
            duration=duration if max_connections == limits[0] else min(duration, 20.0),
            warmup=warmup,
            processes=processes,
            threads=threads,
            fake=fake,
        )
    pool_size = int(os.environ.get("SKEIN_DB_POOL_SIZE", "32"))  # the stack's processes inherit it (config/settings.py)
    pools = pool_size * (processes + 1)
    for max_connections, measured in runs.items():
        skein, audit = measured["skein"], measured["audit"]
        label = f"{conversations} conversations, {latency * 1000:.0f} ms model, PostgreSQL max_connections={max_connections}"
        bad = audit["lost"] + audit["duplicated"] + audit["unexpected"]
        failed_turns = sum(skein["errors"].values())
        result.rows += [
            Row(
                f"throughput, {label} (turns/s)",
                skein["turns_per_s"],
                base["turns_per_s"],
                "turns/s",
                _ratio(skein["turns_per_s"], base["turns_per_s"]),
                "Skein / bare",
                f"≥ {GOAL:g} turns/s",
                skein["turns_per_s"] >= GOAL,
                note=f"peak {measured['peak_connections']} PostgreSQL connections; failed turns {failed_turns}: "
                + ("; ".join(f"{n}× {e[:160]}" for e, n in skein["errors"].most_common(3)) or "none"),
            ),
            Row(
                f"  latency p50 ({max_connections} conns)",
                skein["latency_ms"].get("p50"),
                base["latency_ms"].get("p50"),
                "ms",
                _ratio(skein["latency_ms"].get("p50"), base["latency_ms"].get("p50")),
                "Skein / bare",
            ),
            Row(
                f"  latency p99 ({max_connections} conns)",
                skein["latency_ms"].get("p99"),
                base["latency_ms"].get("p99"),
                "ms",
                _ratio(skein["latency_ms"].get("p99"), base["latency_ms"].get("p99")),
                "Skein / bare",
            ),
            Row(
                f"  peak PostgreSQL connections ({max_connections} conns)",
                measured["peak_connections"],
                pools,
                "",
                None,
                "peak / pools' sizes",
                f"≤ {pools} (the pools' sizes)",
                measured["peak_connections"] <= pools,
                note=f"{processes} worker process(es) and 1 daphne, a pool of {pool_size} each; {processes * threads} turns in flight at most",
            ),
            Row(
                f"  lost + duplicated turns ({max_connections} conns, every transcript checked)",
                bad,
                0,
                "",
                None,
                "",
                "0",
                bad == 0 and audit["threads_out_of_order"] == 0,
                note=f"lost {audit['lost']}, duplicated {audit['duplicated']}, unexpected {audit['unexpected']}, threads out of "
                f"order {audit['threads_out_of_order']}, user messages without reply {audit['user_messages_without_reply']}, "
                f"over {audit['acknowledged']} acknowledged turns on {audit['threads_checked']} threads",
            ),
        ]
    result.details = {
        "conversations": conversations,
        "model_latency_s": latency,
        "window_s": duration,
        "warmup_s": warmup,
        "worker": f"{processes} process(es) x --pool threads --concurrency {threads}",
        "web": "1 daphne process",
        "baseline": {k: v for k, v in base.items()} | {"errors": dict(base["errors"])},
        "runs": {
            str(k): {
                "skein": {kk: vv for kk, vv in v["skein"].items() if kk != "records"} | {"errors": dict(v["skein"]["errors"])},
                "audit": v["audit"],
                "peak_connections": v["peak_connections"],
                "log_errors": v["log_errors"],
                "timeline_ms": v["timeline_ms"],
                "cpu_s_in_window": v["cpu_s_in_window"],
                "cpu_ms_per_turn": v["cpu_ms_per_turn"],
            }
            for k, v in runs.items()
        },
        "notes": [
            f"worker: {processes} Celery process(es) × {threads} threads (one process per core; at most {processes * threads} turns "
            f"in flight, i.e. ≤ {processes * threads / latency:.0f} turns/s at {latency * 1000:.0f} ms per model call); web: 1 daphne",
            "each run uses a private PostgreSQL server started by the bench (so exhausting its connections disturbs nobody); "
            "max_connections=100 is PostgreSQL's default, 500 lifts the limit to show throughput without it",
            f"baseline: {processes} processes × {threads} threads calling litellm.completion(stream=True) directly "
            "(the same parallelism as the worker, without Skein)",
            f"model latency {latency * 1000:.0f} ms; window {duration:.0f} s after {warmup:.0f} s warm-up",
        ],
    }
    return result


def _ratio(a, b):
    return a / b if a and b else None
