"""Skein stacks for the benchmarks, started with tests/stack.py's helpers and stopped by ``Cleanup``.

- embedded: one daphne process, no REDIS_URL (eager Celery: the turn runs in the web process),
  SQLite in a temporary directory.
- full: daphne + a Celery worker (threads pool), Redis db 14 as broker and channel layer, and the
  bench PostgreSQL database.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .common import BENCH_DB, BENCH_NAMESPACE, PROFILE, REDIS_URL, Cleanup, base_env, log, prepare_database, temp_dir


@dataclass
class Stack:
    mode: str
    base: str
    env: dict
    log_dir: Path
    processes: list = field(default_factory=list)
    worker_concurrency: int | None = None
    worker_processes: int = 0

    @property
    def ws(self) -> str:
        return self.base.replace("http://", "ws://")

    def pids(self, name: str) -> list[int]:
        return [p.proc.pid for p in self.processes if p.name.startswith(name)]

    def outputs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.output()[-6000:]}" for p in self.processes)


ACTIVE: list[Stack] = []


def dump_logs() -> None:
    """The tail of every running stack's process logs (after a failure)."""
    for stack in ACTIVE:
        print(f"===== {stack.mode} stack logs ({stack.log_dir})\n{stack.outputs()}", flush=True)


def _register(stack: Stack) -> Stack:
    ACTIVE.append(stack)
    Cleanup.push("stack registry", lambda: ACTIVE.remove(stack))
    return stack


def _push(process) -> None:
    Cleanup.push(process.name, process.stop)


def embedded(**extra_env) -> Stack:
    from tests.stack import start_daphne

    directory = temp_dir("skein-bench-embedded-")
    env = base_env(DATABASE_URL=f"sqlite:///{directory / 'embedded.sqlite3'}", **extra_env)
    log("embedded stack: migrating a fresh SQLite database")
    prepare_database(env)
    web, base = start_daphne(env, directory)
    _push(web)
    log(f"embedded stack: daphne at {base}")
    return _register(Stack("embedded", base, env, directory, [web]))


def full(*, concurrency: int = 8, worker_processes: int = 1, database_url: str | None = None, **extra_env) -> Stack:
    """The full stack on the bench database (already migrated by the caller) or on ``database_url``
    (migrated here), and Redis db 14 under this run's namespace."""
    import redis

    from tests.stack import full_mode_env, start_daphne, start_worker

    directory = temp_dir("skein-bench-full-")

    def forget_keys() -> None:  # this run's keys only: another run may share the Redis db
        client = redis.Redis.from_url(REDIS_URL)
        for key in client.scan_iter(match=f"*{BENCH_NAMESPACE}*", count=1000):
            client.delete(key)

    forget_keys()
    Cleanup.push("redis keys of this run", forget_keys)
    env = full_mode_env(BENCH_DB, REDIS_URL, **{"SKEIN_LOG_LEVEL": "WARNING", "SKEIN_NAMESPACE": BENCH_NAMESPACE, **extra_env})
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    if database_url:
        env["DATABASE_URL"] = database_url
        log("full stack: migrating its database")
        prepare_database(env)
    processes = []
    for index in range(worker_processes):
        worker = start_worker(env, directory, concurrency=concurrency, name=f"worker{index + 1}")
        _push(worker)
        processes.append(worker)
    web, base = start_daphne(env, directory)
    _push(web)
    processes.append(web)
    log(f"full stack: daphne at {base}, {worker_processes} worker process(es) x {concurrency} threads")
    return _register(Stack("full", base, env, directory, processes, concurrency, worker_processes))


def latency_stack(mode: str, *, profile_as: str):
    """The stack the latency benchmarks measure a turn on (embedded, or full with one worker of 8
    threads), and with ``--profile`` a py-spy on its processes (every thread: where wall time goes)."""
    stack = embedded() if mode == "embedded" else full(concurrency=8)
    profile = None
    if PROFILE["enabled"]:
        from .profiling import PySpy

        profile = PySpy({f"{profile_as}-{mode}-{p.name}": p.proc.pid for p in stack.processes}, idle=True)
    return stack, profile
