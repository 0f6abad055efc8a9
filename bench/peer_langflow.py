"""6. Langflow side by side (an optional peer: ``make bench PEER=langflow``).

The same chat through Skein's full stack and through Langflow's own "Memory Chatbot" starter flow
(chat input -> message history of the last 10 messages -> prompt -> model -> chat output), both
calling one fake model server (its own process) that answers at once with the same short reply.
Skein's flow is trigger.chat -> llm with a ``memory.window`` of 10 messages -> output. Turns go in blocks of one
conversation (25 turns, a new thread or session each), Skein's and Langflow's blocks alternating,
so that load on the machine weighs on both alike; each block's server CPU is read from the
process trees (Skein: daphne + the Celery worker; Langflow: its server; neither counts the
database server: Langflow keeps its messages in SQLite in-process, Skein in PostgreSQL).

Langflow is installed with uv into a venv of its own (``bench/.peers/langflow-<version>``, ignored
by git), never into Skein's; the first run downloads it (about 1.8 GB). Two of its settings are
needed to reach a model server on loopback: ``LANGFLOW_SSRF_PROTECTION_ENABLED=false`` (its guard
refuses private addresses) and the fake server's address written ``127.1`` (in a container Langflow
rewrites ``127.0.0.1`` and ``localhost`` to the container's host).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from . import stacks
from .common import (
    BENCH_DIR,
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
    summarize,
    temp_dir,
)

NAME = "langflow"
TITLE = "Langflow side by side"
LANGFLOW_VERSION = "1.13.0"
TURNS_PER_CONVERSATION = 25
HISTORY_MESSAGES = 10
MEMORY = {"type": "memory.window", "max_messages": HISTORY_MESSAGES}
STARTER_FLOW = "Memory Chatbot"
# One fixed reply for both: an echo would grow Langflow's prompt without bound (its prompt, which
# holds the history, is the last user message, and each echo of it joins the next history).
REPLY = "Noted: a short answer from the model."


def peer_venv() -> Path:
    """Langflow's own venv, made with uv on first use."""
    venv = BENCH_DIR / ".peers" / f"langflow-{LANGFLOW_VERSION}"
    python = venv / "bin" / "python"
    if (venv / "bin" / "langflow").exists():
        return venv
    uv = Path(sys.executable).parent / "uv"
    if not uv.exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "uv"], check=True)
    log(f"langflow: installing langflow=={LANGFLOW_VERSION} into {venv} with uv (once; about 1.8 GB)")
    subprocess.run([str(uv), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    subprocess.run([str(uv), "pip", "install", "--quiet", "--python", str(python), f"langflow=={LANGFLOW_VERSION}"], check=True)
    return venv


class Langflow:
    """A Langflow server (backend only) on a fresh SQLite database, and its Memory Chatbot flow."""

    def __init__(self, venv: Path, fake_base_url: str):
        import httpx

        from tests.stack import Process, free_port, wait_for

        directory = temp_dir("skein-bench-langflow-")
        port = free_port()
        # Only what it needs: nothing of the bench's own environment (Skein's settings) leaks in.
        env = {
            **{key: os.environ[key] for key in ("PATH", "HOME", "LANG", "TMPDIR") if key in os.environ},
            "LANGFLOW_CONFIG_DIR": str(directory),
            "LANGFLOW_DATABASE_URL": f"sqlite:///{directory / 'langflow.db'}",
            "LANGFLOW_AUTO_LOGIN": "true",
            "LANGFLOW_SSRF_PROTECTION_ENABLED": "false",
            "OPENAI_BASE_URL": fake_base_url.replace("127.0.0.1", "127.1"),
            "DO_NOT_TRACK": "true",
        }
        self.process = Process(
            "langflow",
            [str(venv / "bin" / "langflow"), "run", "--backend-only", "--host", "127.0.0.1", "--port", str(port)],
            env,
            directory,
        )
        Cleanup.push("langflow server", self.process.stop)
        self.base = f"http://127.0.0.1:{port}"

        def up():
            try:
                return httpx.get(f"{self.base}/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        log("langflow: starting its server")
        wait_for(
            lambda: up() or not self.process.alive(), timeout=300, interval=1, what="Langflow to start", diagnostics=self.process.output
        )
        assert self.process.alive(), self.process.output()
        self.client = httpx.Client(base_url=self.base, timeout=120)
        Cleanup.push("langflow client", self.client.close)
        token = check(self.client.get("/api/v1/auto_login"))["access_token"]
        bearer = {"Authorization": f"Bearer {token}"}
        key = check(self.client.post("/api/v1/api_key/", json={"name": "skein bench"}, headers=bearer))["api_key"]
        self.client.headers["x-api-key"] = key
        starters = check(self.client.get("/api/v1/starter-projects/", headers=bearer))
        starter = next(flow for flow in starters if flow["name"] == STARTER_FLOW)
        flow = check(self.client.post("/api/v1/flows/", json={"name": "skein bench", "data": starter["data"]}, headers=bearer), 201)
        self.flow_id = flow["id"]
        node_ids = {node["data"]["type"]: node["id"] for node in starter["data"]["nodes"]}
        # The model and the history length, as its UI would set them, for every run.
        self.tweaks = {
            node_ids["LanguageModelComponent"]: {"model": [{"name": "gpt-4o-mini", "provider": "OpenAI"}], "api_key": "k"},
            node_ids["Memory"]: {"n_messages": HISTORY_MESSAGES},
        }

    def turn(self, message: str, session: str) -> str:
        try:
            response = self.client.post(
                f"/api/v1/run/{self.flow_id}",
                params={"stream": "false"},
                json={"input_value": message, "session_id": session, "tweaks": self.tweaks},
            )
        except Exception:
            log(f"langflow: the server's log ends with\n{self.process.output()[-3000:]}")
            raise
        body = check(response)
        return body["outputs"][0]["outputs"][0]["results"]["message"]["text"]


def run(quick: bool) -> Result:
    conversations = 2 if quick else 12
    result = Result(NAME, TITLE)
    directory = temp_dir("skein-bench-peer-")
    fake = FakeServerProcess(delay=0.0, text=REPLY, log_dir=directory)
    Cleanup.push("fake model server", fake.stop)
    langflow = Langflow(peer_venv(), fake.base_url)
    stack = stacks.full(concurrency=8)
    token = api_token(stack.base)
    client = api_client(stack.base, token)
    Cleanup.push("http client", client.close)
    workflow = create_chatbot(client, fake.base_url, memory=MEMORY, name="langflow side by side")
    chat_url = f"/api/workflows/{workflow['id']}/chat/"
    skein_meter = CpuMeter({"daphne": stack.pids("daphne")[0], "worker": stack.pids("worker")[0]}, include_self=False)
    langflow_meter = CpuMeter({"langflow": langflow.process.proc.pid}, include_self=False)

    def skein_block(index: int, measured: bool) -> list[float]:
        times, thread = [], None
        for turn in range(TURNS_PER_CONVERSATION):
            message = f"conversation {index} turn {turn}"
            started = time.perf_counter()
            body = check(client.post(chat_url, json={"message": message, "thread": thread}))
            times.append(time.perf_counter() - started)
            if body.get("reply") != REPLY:
                raise AssertionError(f"Skein answered {body}")
            thread = body["thread"]
        return times if measured else []

    def langflow_block(index: int, measured: bool) -> list[float]:
        times = []
        for turn in range(TURNS_PER_CONVERSATION):
            started = time.perf_counter()
            reply = langflow.turn(f"conversation {index} turn {turn}", session=f"bench-{index}-{measured}")
            times.append(time.perf_counter() - started)
            if reply != REPLY:
                raise AssertionError(f"Langflow answered {reply!r}")
        return times if measured else []

    log("langflow: one warm-up conversation each")
    skein_block(-1, False)
    langflow_block(-1, False)
    skein_times, langflow_times = [], []
    cpu = {"skein": 0.0, "langflow": 0.0}
    for index in range(conversations):
        blocks = [("skein", skein_block, skein_meter, skein_times), ("langflow", langflow_block, langflow_meter, langflow_times)]
        for name, block, meter, times in blocks if index % 2 == 0 else blocks[::-1]:
            meter.start()
            times.extend(block(index, True))
            cpu[name] += sum(meter.stop().values())
    turns = conversations * TURNS_PER_CONVERSATION
    skein, peer = summarize([ms(t) for t in skein_times]), summarize([ms(t) for t in langflow_times])
    cpu_ms = {name: seconds * 1000 / turns for name, seconds in cpu.items()}
    log(
        f"langflow: p50 Skein {skein['p50']:.1f} ms, Langflow {peer['p50']:.1f} ms; CPU per turn "
        f"Skein {cpu_ms['skein']:.1f} ms, Langflow {cpu_ms['langflow']:.1f} ms (n={turns} each)"
    )
    for q in ("p50", "p99"):
        result.rows.append(
            Row(
                f"chat turn with a 10-message history, {q} (Skein full stack vs Langflow {LANGFLOW_VERSION})",
                skein[q],
                peer[q],
                "ms",
                peer[q] / skein[q],
                "Langflow / Skein",
            )
        )
    result.rows.append(
        Row(
            "server CPU per turn (Skein: daphne + worker; Langflow: its server)",
            cpu_ms["skein"],
            cpu_ms["langflow"],
            "ms",
            cpu_ms["langflow"] / cpu_ms["skein"],
            "Langflow / Skein",
            note="database servers not counted (Skein's PostgreSQL; Langflow's SQLite is in-process)",
        )
    )
    result.details = {
        "langflow_version": LANGFLOW_VERSION,
        "turns_each": turns,
        "turns_per_conversation": TURNS_PER_CONVERSATION,
        "history_messages": HISTORY_MESSAGES,
        "latency_ms": {"skein": skein, "langflow": peer},
        "cpu_ms_per_turn": cpu_ms,
        "skein_worker": "1 process, --pool threads --concurrency 8",
    }
    return result
