"""Real processes: for full-mode tests a Celery worker, celery beat and daphne, against Redis and
the pytest PostgreSQL database (tests marked ``postgres`` and ``redis``); for the embedded mode the
one server ``make run`` starts, on a SQLite file of its own."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
# This pytest process's own queue and keys in Redis: runs side by side never take each other's tasks.
TEST_NAMESPACE = f"skein-test-{os.getpid()}"
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def full_mode_env(database_name: str, redis_url: str, **extra: str) -> dict:
    """The environment of a Skein process on the test database: the full mode when ``redis_url``
    is set (then with the settings it refuses to start without), else the embedded mode."""
    from django.conf import settings as django_settings
    from django.db import connection

    settings = connection.settings_dict
    user = settings.get("USER") or "postgres"
    host = settings.get("HOST") or "127.0.0.1"
    port = settings.get("PORT") or 5432
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"postgres://{user}@{host}:{port}/{database_name}",
        "REDIS_URL": redis_url,
        "SKEIN_NAMESPACE": TEST_NAMESPACE,
        "PYTHONUNBUFFERED": "1",
    }
    if redis_url:
        env.update(
            # A key of its own (the full mode refuses the development one); the provider keys the
            # test process stored are encrypted under its key, so the processes get that one.
            SECRET_KEY=f"skein-tests-full-mode-{os.getpid()}-not-a-secret-0123456789abcdef",
            SKEIN_ENCRYPTION_KEY=django_settings.SKEIN_ENCRYPTION_KEY or f"skein:{django_settings.SECRET_KEY}",
            SKEIN_HTTPS="0",  # plain HTTP on loopback: no TLS proxy in front
            SKEIN_PROVIDER_ALLOWED_HOSTS="127.0.0.1",  # the fake model server (tests/fakellm.py)
        )
    env.update({k: str(v) for k, v in extra.items()})
    return env


def stop_group(proc: subprocess.Popen, sig=signal.SIGTERM, timeout: float = 15) -> None:
    """Stop a process started with ``start_new_session`` and its children: ``sig``, then SIGKILL."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


class Process:
    def __init__(self, name: str, args: list[str], env: dict, log_dir: Path):
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self.log = open(self.log_path, "w")
        # This checkout's code, whatever checkout the venv's editable install points at: a console
        # script (daphne, celery) does not put its working directory on sys.path.
        env = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))}
        self.proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def output(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-6000:]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self, sig=signal.SIGKILL) -> None:
        if self.alive():
            os.killpg(self.proc.pid, sig)

    def stop(self) -> None:
        stop_group(self.proc)
        self.log.close()


def wait_for(condition, *, timeout: float, interval: float = 0.05, what: str = "condition", diagnostics=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    extra = f"\n{diagnostics()}" if diagnostics else ""
    raise AssertionError(f"timed out after {timeout}s waiting for {what}{extra}")


def start_worker(env: dict, log_dir: Path, *, concurrency: int = 16, name: str = "worker", beat: bool = False) -> Process:
    args = [
        str(BIN / "celery"),
        "-A",
        "config",
        "worker",
        "--pool",
        "threads",
        "--concurrency",
        str(concurrency),
        "--loglevel",
        "INFO",
        "--hostname",
        f"{name}@%h",
        "--without-gossip",
        "--without-mingle",
    ]
    if beat:
        args += ["-B", "--scheduler", "triggers.beat:Scheduler"]
    worker = Process(name, args, env, log_dir)
    wait_for(lambda: "ready." in worker.output() or not worker.alive(), timeout=90, what=f"{name} to start", diagnostics=worker.output)
    assert worker.alive(), worker.output()
    return worker


def start_daphne(env: dict, log_dir: Path, *, app: str = "config.asgi:application", name: str = "daphne") -> tuple[Process, str]:
    port = free_port()
    # The Makefile's listen queue (BACKLOG): Twisted's default of 50 drops connections arriving at once.
    web = Process(name, [str(BIN / "daphne"), "-e", f"tcp:port={port}:interface=127.0.0.1:backlog=1024", app], env, log_dir)
    base = f"http://127.0.0.1:{port}"

    def up():
        try:
            return httpx.get(f"{base}/api/auth/csrf/", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    wait_for(lambda: up() or not web.alive(), timeout=90, interval=0.2, what="daphne to start", diagnostics=web.output)
    assert web.alive(), web.output()
    return web, base


def log_in_over_http(base: str, username: str, password: str) -> str:
    """A session cookie minted by the server at ``base`` itself (its SECRET_KEY signs sessions)."""
    with httpx.Client(base_url=base, timeout=30) as client:
        csrf = client.get("/api/auth/csrf/").json()["csrftoken"]
        response = client.post(
            "/api/auth/login/", json={"username": username, "password": password}, headers={"X-CSRFToken": csrf, "Referer": base + "/"}
        )
        assert response.status_code == 200, response.text
        return f"sessionid={client.cookies['sessionid']}"


# --- the embedded mode: what `make run` starts ------------------------------------------------------
EMBEDDED_APP = "config.embedded:application"  # the Makefile's `run` serves this
PROVIDER_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_API_BASE")


def embedded_env(database: Path, **extra: str) -> dict:
    """The embedded mode on a SQLite file of its own, with no provider key: a fresh installation."""
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", *PROVIDER_KEYS)}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", DATABASE_URL=f"sqlite:///{database}", PYTHONUNBUFFERED="1")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def embedded_prepare(env: dict, *, demos: bool = False) -> None:
    """What `make run` does before serving: migrate, then create the first account (demo / demo),
    its local provider and (``demos``) the demo workflows."""
    for command in (["migrate", "--noinput"], ["skein_bootstrap"] + ([] if demos else ["--no-demos"])):
        done = subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr


def start_embedded(env: dict, log_dir: Path, *, name: str = "embedded") -> tuple[Process, str]:
    """The embedded server `make run` starts (daphne serving ``config.embedded``), nothing else."""
    return start_daphne(env, log_dir, app=EMBEDDED_APP, name=name)


@contextmanager
def logged_in_client(base: str, username: str = "alice", password: str = "alice-password"):
    """An HTTP client of a running stack, with the API token of ``username`` (conftest's ``user``)."""
    response = httpx.post(f"{base}/api/auth/token/", json={"username": username, "password": password}, timeout=60)
    with httpx.Client(base_url=base, headers={"Authorization": f"Token {response.json()['token']}"}, timeout=60) as http:
        yield http


@contextmanager
def full_stack(database_name: str, redis_url: str, log_dir: Path, *, concurrency: int = 16, **env_extra):
    env = full_mode_env(database_name, redis_url, **env_extra)
    processes = []
    try:
        worker = start_worker(env, log_dir, concurrency=concurrency)
        processes.append(worker)
        web, base = start_daphne(env, log_dir)
        processes.append(web)
        yield {"base": base, "worker": worker, "web": web, "env": env, "processes": processes}
    finally:
        for process in processes:
            process.stop()
