"""What every benchmark shares: the bench databases, Django in this process, the fake model server,
process cleanup, statistics and result rows.

The bench process itself runs Django against its own PostgreSQL database (``skein_bench_<pid>``), which
the full-mode stack (worker + daphne, started with ``tests.stack``) uses too. The embedded-mode
stack gets its own SQLite file in a temporary directory.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / "bench"
PYTHON = sys.executable

PG_HOST = os.environ.get("SKEIN_BENCH_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("SKEIN_BENCH_PG_PORT", "5432"))
PG_USER = os.environ.get("SKEIN_BENCH_PG_USER", "postgres")
# Per run (pid): two bench runs on one machine (or a bench beside the tests) never share a database
# or Redis keys. The database is dropped at the end of the run.
BENCH_DB = os.environ.get("SKEIN_BENCH_DB", f"skein_bench_{os.getpid()}")
REDIS_URL = os.environ.get("SKEIN_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
BENCH_NAMESPACE = f"skein-bench-{os.getpid()}"

KEEP_LOGS = {"enabled": False}  # set by ``--keep-logs``: process logs stay in their temp directories
PROFILE = {"enabled": False}  # set by ``--profile``: benchmarks run py-spy on Skein's processes

USERNAME = "bench"
PASSWORD = "bench-password-1"


def pg_url(name: str = BENCH_DB) -> str:
    return f"postgres://{PG_USER}@{PG_HOST}:{PG_PORT}/{name}"


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


# --- databases ------------------------------------------------------------------------------------
def pg_recreate(name: str = BENCH_DB) -> None:
    """A fresh, empty PostgreSQL database for this run (an earlier run's is dropped)."""
    import psycopg

    with psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname="postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def pg_drop(name: str = BENCH_DB) -> None:
    import psycopg

    try:
        with psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname="postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    except Exception as exc:  # cleanup is best effort
        log(f"could not drop database {name}: {exc}")


def base_env(**extra: str) -> dict:
    """The environment of a Skein process: this one's, minus the mode switches, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings", PYTHONUNBUFFERED="1", LITELLM_LOCAL_MODEL_COST_MAP="True", SKEIN_LOG_LEVEL="WARNING"
    )
    env.update({k: str(v) for k, v in extra.items()})
    return env


def manage(env: dict, *args: str, timeout: float = 600) -> str:
    result = subprocess.run([PYTHON, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)[:80]} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result.stdout


CREATE_USER = f"""
from django.core.management import call_command
call_command("migrate", verbosity=0, interactive=False)
from django.contrib.auth import get_user_model
User = get_user_model()
if not User.objects.filter(username={USERNAME!r}).exists():
    User.objects.create_user({USERNAME!r}, password={PASSWORD!r})
"""


def prepare_database(env: dict) -> None:
    """Migrate the database ``env`` points at and create the bench account."""
    manage(env, "shell", "-c", CREATE_USER)


def pg_prepare_in_process() -> None:
    """Django in this process on the (fresh) bench database: migrated, with the bench account."""
    setup_django()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    User = get_user_model()
    if not User.objects.filter(username=USERNAME).exists():
        User.objects.create_user(USERNAME, password=PASSWORD)


def setup_django() -> None:
    """Django in this process, on the bench PostgreSQL database (embedded settings otherwise)."""
    import django
    from django.conf import settings

    if settings.configured:
        return
    os.environ.pop("REDIS_URL", None)
    os.environ["DATABASE_URL"] = pg_url()
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("SKEIN_LOG_LEVEL", "WARNING")
    django.setup()


# --- the fake model server ------------------------------------------------------------------------
def fake_llm_class():
    """tests.fakellm.FakeLLM, plus: the time the first content chunk of each streamed answer was
    written to the socket (for the streaming benchmark)."""
    from tests.fakellm import FakeLLM

    class BenchFakeLLM(FakeLLM):
        def __init__(self, *, record: bool = True):
            super().__init__()
            self.record = record
            self.first_chunk_sent: list[float] = []  # monotonic times, in the order answers started

        def _record(self, request) -> None:
            if self.record:
                super()._record(request)

        def _handler_class(self):
            fake = self
            base = super()._handler_class()

            class StampingWriter:
                def __init__(self, raw):
                    self.raw = raw
                    self.stamped = False

                def write(self, data):
                    n = self.raw.write(data)
                    # A chunk of the chunked body: its size line, then the event.
                    if not self.stamped and b"\r\ndata: " in data[:16] and b'"content"' in data:
                        self.raw.flush()
                        self.stamped = True
                        with fake._lock:
                            fake.first_chunk_sent.append(time.monotonic())
                    return n

                def __getattr__(self, name):
                    return getattr(self.raw, name)

            class Handler(base):
                def _stream(self, request, reply):
                    self.wfile = StampingWriter(self.wfile)
                    try:
                        super()._stream(request, reply)
                    finally:
                        self.wfile = self.wfile.raw

            return Handler

    return BenchFakeLLM


def start_fake_llm(*, record: bool = True):
    return fake_llm_class()(record=record).start()


class FakeServerProcess:
    """The fake model server in a process of its own (``python -m bench.fakeserver``), so that under
    load it does not compete with the client for this process's GIL."""

    def __init__(self, *, delay: float, text: str, log_dir: Path):
        self.log_path = log_dir / "fakeserver.log"
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [PYTHON, "-m", "bench.fakeserver", "--delay", str(delay), "--text", text],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            start_new_session=True,
        )
        line = self.proc.stdout.readline()
        if not line.startswith("http"):
            self.stop()
            raise RuntimeError(f"fake server did not start: {line!r} {self.log_path.read_text()[-2000:]}")
        self.base_url = line.strip()

    def stop(self) -> None:
        from tests.stack import stop_group

        stop_group(self.proc, timeout=10)
        self._log.close()


# --- cleanup ----------------------------------------------------------------------------------------
class Cleanup:
    """Stops what a benchmark started, last first, whatever happens (also on SIGTERM / Ctrl-C)."""

    _stack: list = []

    @classmethod
    def push(cls, what: str, stop) -> None:
        cls._stack.append((what, stop))

    @classmethod
    def pop_all(cls) -> None:
        while cls._stack:
            what, stop = cls._stack.pop()
            try:
                stop()
            except Exception as exc:
                log(f"cleanup of {what} failed: {exc}")

    @classmethod
    def scope(cls):
        return _Scope(cls)


class _Scope:
    def __init__(self, cleanup):
        self.cleanup = cleanup

    def __enter__(self):
        self.mark = len(self.cleanup._stack)
        return self

    def __exit__(self, *exc):
        while len(self.cleanup._stack) > self.mark:
            what, stop = self.cleanup._stack.pop()
            try:
                stop()
            except Exception as error:
                log(f"cleanup of {what} failed: {error}")
        return False


def temp_dir(prefix: str) -> Path:
    """A temporary directory (process logs, SQLite), removed afterwards unless ``--keep-logs``."""
    import shutil

    path = Path(tempfile.mkdtemp(prefix=prefix))
    if KEEP_LOGS["enabled"]:
        log(f"keeping {path}")
    else:
        Cleanup.push(f"temp dir {path}", lambda: shutil.rmtree(path, ignore_errors=True))
    return path


# --- HTTP ---------------------------------------------------------------------------------------------
def api_client(base: str, token: str | None = None, timeout: float = 120.0):
    import httpx

    headers = {"Authorization": f"Token {token}"} if token else {}
    return httpx.Client(base_url=base, headers=headers, timeout=timeout)


def api_token(base: str) -> str:
    with api_client(base) as client:
        response = client.post("/api/auth/token/", json={"username": USERNAME, "password": PASSWORD})
        response.raise_for_status()
        return response.json()["token"]


def check(response, expected: int = 200) -> dict:
    if response.status_code != expected:
        raise RuntimeError(f"{response.request.method} {response.request.url} answered {response.status_code}: {response.text[:500]}")
    return response.json() if response.content else {}


def create_workflow(client, fake_base_url: str, graph_of, *, name: str) -> dict:
    """A provider on the fake server, and a workflow of ``graph_of(provider id)`` using it."""
    provider = check(
        client.post("/api/providers/", json={"name": "fake", "kind": "openai_compatible", "api_base": fake_base_url, "api_key": "k"}), 201
    )
    workflow = check(client.post("/api/workflows/", json={"name": name, "graph": graph_of(provider["id"])}), 201)
    if workflow.get("errors"):
        raise RuntimeError(f"the bench workflow is invalid: {workflow['errors']}")
    return workflow


def create_chatbot(client, fake_base_url: str, *, memory: dict | None = None, name: str = "bench chatbot") -> dict:
    from tests.graphs import chat_graph

    return create_workflow(client, fake_base_url, lambda provider: chat_graph(provider, memory=dict(memory) if memory else None), name=name)


# --- side by side -------------------------------------------------------------------------------------
def alternating_pairs(turn, baseline, *, pairs: int, warmup: int, profile=None) -> list[tuple]:
    """Skein's turn and its baseline, measured in pairs: ``turn()`` returns (its figures, what the
    baseline repeats), ``baseline(that)`` its figures. ``warmup`` pairs first, not returned; then
    which goes first alternates (a baseline going first repeats the previous turn). ``profile``
    (a ``profiling.PySpy``) samples the measured pairs."""
    for _ in range(warmup):
        _, repeated = turn()
        baseline(repeated)
    measured, repeated = [], None
    if profile:
        profile.start()
    try:
        for index in range(pairs):
            if index % 2 == 0 or repeated is None:
                figures, repeated = turn()
                measured.append((figures, baseline(repeated)))
            else:
                compared = baseline(repeated)
                figures, repeated = turn()
                measured.append((figures, compared))
    finally:
        if profile:
            profile.stop()
    return measured


# --- statistics ---------------------------------------------------------------------------------------
def percentile(values, q: float) -> float:
    """Linear-interpolated percentile (q in 0..100) of a non-empty sequence."""
    data = sorted(values)
    if not data:
        return float("nan")
    if len(data) == 1:
        return float(data[0])
    pos = (len(data) - 1) * q / 100.0
    low = int(pos)
    high = min(low + 1, len(data) - 1)
    return float(data[low] + (data[high] - data[low]) * (pos - low))


def summarize(values) -> dict:
    values = list(values)
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "min": min(values),
        "p50": percentile(values, 50),
        "p90": percentile(values, 90),
        "p99": percentile(values, 99),
        "max": max(values),
        "mean": statistics.fmean(values),
    }


def ms(seconds: float) -> float:
    return seconds * 1000.0


def fmt_num(value, unit: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    if value != value:  # NaN
        return "—"
    if isinstance(value, int):
        return f"{value:,} {unit}".strip()
    if abs(value) >= 100:
        text = f"{value:,.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    elif abs(value) >= 1:
        text = f"{value:.2f}"
    else:
        text = f"{value:.3f}"
    return f"{text} {unit}".strip()


@dataclass
class Row:
    """One line of RESULTS.md."""

    benchmark: str
    skein: float | str | None
    baseline: float | str | None
    unit: str
    ratio: float | None = None
    ratio_label: str = ""  # what the ratio means, e.g. "baseline / Skein"
    goal: str = ""
    met: bool | None = None
    note: str = ""

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Result:
    name: str
    title: str
    rows: list[Row] = field(default_factory=list)
    details: dict = field(default_factory=dict)
    status: str = "ok"  # ok | pending | skipped | failed
    message: str = ""

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "title": self.title,
            "status": self.status,
            "message": self.message,
            "rows": [r.as_dict() for r in self.rows],
            "details": self.details,
        }


def load_average() -> tuple[float, float, float]:
    return os.getloadavg()


def machine_info() -> dict:
    import platform

    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_at_start": load_average(),
    }


def git_commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except Exception:
        return "unknown"


def dump_json(path: Path, payload: dict) -> None:
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")


# --- CPU accounting ----------------------------------------------------------------------------------
def _proc_stat(pid: int):
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    # after the command: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14)
    return int(fields[1]), sum(int(x) for x in fields[11:15])


def cpu_seconds(root_pid: int) -> float:
    """CPU time of a process and all its descendants, including reaped children (user + system)."""
    ticks = os.sysconf("SC_CLK_TCK")
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _proc_stat(int(entry))
            if stat:
                stats[int(entry)] = stat
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [root_pid]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1]
        todo.extend(children.get(pid, []))
    return total / ticks


class CpuMeter:
    """CPU seconds used by some process trees (and this process) between start() and stop()."""

    def __init__(self, pids: dict[str, int], *, include_self: bool = True):
        self.pids = pids
        self.include_self = include_self
        self.first: dict[str, float] = {}
        self.used: dict[str, float] = {}

    def _read(self) -> dict[str, float]:
        values = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        if self.include_self:
            import resource

            usage = resource.getrusage(resource.RUSAGE_SELF)
            values["bench client (this process)"] = usage.ru_utime + usage.ru_stime
        return values

    def start(self) -> None:
        self.first = self._read()

    def stop(self) -> dict[str, float]:
        last = self._read()
        self.used = {name: last[name] - self.first.get(name, 0.0) for name in last}
        return self.used


def run_timeline(client, samples) -> dict:
    """Where turns' time goes, from ``(run id, wall time sent, wall time answered)`` samples (server and
    client share a clock): request -> run created -> started (queue, turn lock) -> finished -> response."""
    from datetime import datetime

    def ts(value):
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()

    parts = {
        "request → run created": [],
        "created → started (queue, lock)": [],
        "started → finished (execution)": [],
        "  of which llm step": [],
        "finished → response at client": [],
    }
    for run_id, sent_at, answered_at in samples:
        run = check(client.get(f"/api/runs/{run_id}/"))
        created, started, finished = ts(run["created"]), ts(run["started"]), ts(run["finished"])
        parts["request → run created"].append(ms(created - sent_at))
        parts["created → started (queue, lock)"].append(ms(started - created))
        parts["started → finished (execution)"].append(ms(finished - started))
        parts["  of which llm step"].append(float(sum(s["duration_ms"] or 0 for s in run["steps"] if s.get("type") == "llm")))
        parts["finished → response at client"].append(ms(answered_at - finished))
    return {k: summarize(v) for k, v in parts.items()}
