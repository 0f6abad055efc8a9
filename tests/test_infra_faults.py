"""Infrastructure faults with real processes: Redis restarted and database connections dropped
while turns are in flight.

Each test runs the full stack (a Celery worker and daphne) and a fake model whose calls are held at
a gate, so that several turns are provably mid-flight when the fault happens. Afterwards every run
must have ended exactly once (succeeded, or failed with an error that says why), the transcripts
must hold each turn's messages exactly once and in order, and a new message must work.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import shutil
import threading
import time

import httpx
import pytest
import redis
from asgiref.sync import async_to_sync
from django.db import IntegrityError, InterfaceError, OperationalError, connection

from runs import services as runs
from runs import streams
from runs.models import Message, Run, Thread
from tests.fakellm import Reply
from tests.graphs import chat_graph
from tests.stack import TEST_NAMESPACE, Process, free_port, full_mode_env, start_daphne, start_worker, wait_for
from workflows import services


def full_stack_test(function):
    """A test of the whole stack in real processes: PostgreSQL, Redis, a Celery worker, daphne."""
    for mark in (pytest.mark.django_db(transaction=True), pytest.mark.redis, pytest.mark.postgres):
        function = mark(function)
    return function


WAITING = httpx.Timeout(10, read=150)  # a client that waits for the reply
ABANDONING = httpx.Timeout(10, read=1.0)  # a client that sends and goes away (a closed tab)


# --- helpers ------------------------------------------------------------------------------------
class Gate:
    """The fake model's responder: a call whose message starts with a held prefix waits until that
    prefix is released. Everything else (and every call once released) answers ``echo: <message>``."""

    def __init__(self, *prefixes: str):
        self.released = {prefix: threading.Event() for prefix in prefixes}
        self.arrived: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, request):
        text = request.last_user
        for prefix, event in self.released.items():
            if text.startswith(prefix):
                with self._lock:
                    self.arrived.append(text)
                event.wait(timeout=120)
        return Reply(text=f"echo: {text}", token_delay=0.005)

    def waiting(self) -> set[str]:
        with self._lock:
            return set(self.arrived)

    def release(self, prefix: str | None = None) -> None:
        for name, event in self.released.items():
            if prefix is None or name == prefix:
                event.set()


class RedisServer:
    """A private redis-server on its own port (never the shared one), without persistence: a
    restart loses everything, as a crashed cache-only Redis does."""

    def __init__(self, directory):
        self.binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not os.access(self.binary, os.X_OK):
            pytest.fail("this test needs redis-server (Debian package redis-server) to start a private Redis")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.directory = directory
        self.processes: list[Process] = []

    @property
    def process(self) -> Process:
        return self.processes[-1]

    def start(self) -> None:
        args = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.directory),
        ]
        self.processes.append(Process(f"redis-{len(self.processes) + 1}", args, dict(os.environ), self.directory))
        wait_for(lambda: self.ping() or not self.process.alive(), timeout=30, what="redis-server to start", diagnostics=self.process.output)
        assert self.process.alive(), self.process.output()

    def ping(self) -> bool:
        import redis

        try:
            return redis.Redis(port=self.port, socket_connect_timeout=1, socket_timeout=1, retry=None).ping()
        except redis.exceptions.RedisError:
            return False

    def kill(self) -> None:
        """kill -9: no shutdown, no save."""
        self.process.kill()
        self.process.proc.wait(timeout=10)
        assert not self.ping()

    def stop(self) -> None:
        for process in self.processes:
            process.stop()


@pytest.fixture
def private_redis(tmp_path):
    directory = tmp_path / "redis"
    directory.mkdir()
    server = RedisServer(directory)
    server.start()
    yield server
    server.stop()


@contextlib.contextmanager
def running_stack(env: dict, log_dir):
    """A worker (16 threads) and daphne, started side by side (each takes a while to import)."""
    with concurrent.futures.ThreadPoolExecutor(2) as starting:
        worker = starting.submit(start_worker, env, log_dir, concurrency=16)
        web = starting.submit(start_daphne, env, log_dir)
    started = [future.result() for future in (worker, web) if future.exception() is None]
    try:
        yield {"worker": worker.result(), "web": web.result()[0], "base": web.result()[1]}
    finally:
        for process in started:
            (process if isinstance(process, Process) else process[0]).stop()


def send_recover_turns(broker_url: str, older_than_s: float) -> None:
    """What beat's ``skein-recover-turns`` entry sends, through the stack's broker (an operator may
    send it at once after an outage, with a shorter age)."""
    from celery import Celery

    client = Celery("skein-test-client", broker=broker_url, set_as_current=False)
    try:
        client.send_task("workflows.tasks.recover_turns", kwargs={"older_than_s": older_than_s}, queue=TEST_NAMESPACE)
    finally:
        client.close()


class Site:
    """A user of the stack over HTTP (token auth), with a pool for requests sent side by side."""

    def __init__(self, base: str, workflow_id: int):
        self.base = base
        self.workflow_id = workflow_id
        token = httpx.post(f"{base}/api/auth/token/", json={"username": "alice", "password": "alice-password"}, timeout=60)
        assert token.status_code == 200, token.text
        self.headers = {"Authorization": f"Token {token.json()['token']}"}
        self.pool = concurrent.futures.ThreadPoolExecutor(16)

    def chat(self, message: str, thread: int | None = None, timeout=WAITING) -> httpx.Response:
        body = {"message": message} | ({"thread": thread} if thread else {})
        return httpx.post(f"{self.base}/api/workflows/{self.workflow_id}/chat/", json=body, headers=self.headers, timeout=timeout)

    def send(self, message: str, thread: int | None = None, *, wait: bool = True) -> concurrent.futures.Future:
        return self.pool.submit(self._send, message, thread, WAITING if wait else ABANDONING)

    def _send(self, message, thread, timeout):
        try:
            return self.chat(message, thread, timeout)
        except httpx.TimeoutException as exc:  # the abandoning client gave up, as it meant to
            return exc

    def get(self, path: str):
        response = httpx.get(f"{self.base}{path}", headers=self.headers, timeout=60)
        assert response.status_code == 200, response.text
        return response.json()

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


def whole_log(process: Process) -> str:
    process.log.flush()
    return process.log_path.read_text(errors="replace")


def runs_of(workflow_id: int, *inputs: str) -> dict[str, Run]:
    found = {run.input: run for run in Run.objects.filter(workflow_id=workflow_id, input__in=inputs)}
    return found if len(found) == len(inputs) else {}


def unfinished(workflow_id: int) -> list[tuple[int, str, str]]:
    return list(
        Run.objects.filter(workflow_id=workflow_id, status__in=[Run.Status.QUEUED, Run.Status.RUNNING]).values_list("id", "input", "status")
    )


def assert_consistent(workflow_id: int, site: Site) -> list[Run]:
    """Every run ended exactly once; each transcript holds each turn's messages once, in order;
    the global memory matches the transcript; the API says the same as the database."""
    from memory.models import History

    runs = list(Run.objects.filter(workflow_id=workflow_id).order_by("id"))
    assert runs and all(run.is_done for run in runs), [(r.pk, r.input, r.status) for r in runs]
    for run in runs:
        written = [(m.role, m.content) for m in Message.objects.filter(run=run).order_by("seq")]
        if run.status == Run.Status.SUCCEEDED:
            assert run.output == f"echo: {run.input}" and not run.error, (run.pk, run.output, run.error)
            assert written == [("user", run.input), ("assistant", run.output)], (run.pk, written)
            # an interrupted attempt left no steps behind: each node's step once
            assert sorted(run.steps.values_list("node", flat=True)) == ["agent", "chat", "out"], run.pk
        else:
            assert run.error.strip(), f"run {run.pk} failed without saying why"
            assert written in ([], [("user", run.input)]), (run.pk, written)
        assert run.attempts >= 1 and run.finished is not None
    for thread in Thread.objects.filter(workflow_id=workflow_id):
        messages = list(thread.messages.order_by("seq"))
        assert [m.seq for m in messages] == list(range(1, len(messages) + 1)), [m.seq for m in messages]
        assert thread.last_seq == len(messages)
        # turns in arrival order, each one's user message before its reply
        order = [(m.run_id, m.role) for m in messages]
        assert order == sorted(order, key=lambda item: (item[0], item[1] != "user")), order
        history = History.objects.filter(workflow_id=workflow_id, kind="global", key=f"thread:{thread.pk}").first()
        remembered = [(m.role, m.content) for m in history.messages.order_by("seq")] if history else []
        assert remembered == [(m.role, m.content) for m in messages], (thread.pk, remembered)
        over_api = site.get(f"/api/threads/{thread.pk}/messages/")
        assert [(m["seq"], m["role"], m["content"]) for m in over_api] == [(m.seq, m.role, m.content) for m in messages]
    for status in ("queued", "running"):
        assert site.get(f"/api/runs/?workflow={workflow_id}&status={status}")["count"] == 0
    for run in runs:
        assert site.get(f"/api/runs/{run.pk}/")["status"] == run.status
    return runs


def assert_answered(response, run: Run) -> None:
    """A waiting client got the turn's outcome: its reply, or a clear error (never a bare 500)."""
    assert not isinstance(response, Exception), f"the client waiting for run {run.pk} got {response!r}"
    if response.status_code == 200:
        body = response.json()
        assert body["run"] == run.pk and body["status"] == run.status
        assert body["reply"] == run.output and body["error"] == run.error
    else:
        assert response.status_code in (502, 503, 504), (response.status_code, response.text)
        assert response.headers["content-type"].startswith("application/json") and response.json()["detail"], response.text


def chatbot(user, provider):
    return services.workflow_create(owner=user, name="infra", graph=chat_graph(provider.pk, memory={"type": "memory.buffer"}))


# --- Redis restarted ----------------------------------------------------------------------------
@full_stack_test
def test_redis_restarted_while_turns_are_in_flight(require_postgres, private_redis, user, provider, fake_llm, tmp_path):
    """kill -9 of Redis (broker, channel layer, run signals, cache) while five turns wait on the
    model and two more are queued behind them; some turns finish while Redis is down and a new
    message arrives meanwhile, the other turns finish after it is back (empty: no persistence).
    Recovery is beat's ``recover_turns``, sent at once rather than after a minute."""
    gate = Gate("a-", "b-")
    fake_llm.responder = gate
    workflow = chatbot(user, provider)
    with running_stack(full_mode_env(connection.settings_dict["NAME"], private_redis.url), tmp_path) as stack:
        site = Site(stack["base"], workflow.pk)
        diagnostics = lambda: stack["worker"].output() + stack["web"].output()  # noqa: E731
        try:
            # two conversations that already exist
            t1 = site.chat("first one").json()["thread"]
            t2 = site.chat("first two").json()["thread"]
            # five turns that reach the model and wait there; "a-" ones will finish while Redis is down
            waiting = {
                "a-new": site.send("a-new"),
                "a-t1": site.send("a-t1", t1),
                "b-new": site.send("b-new"),
                "b-t2": site.send("b-t2", t2),
            }
            site.send("b-abandoned", wait=False)
            in_flight = {"a-new", "a-t1", "b-new", "b-t2", "b-abandoned"}
            wait_for(lambda: gate.waiting() == in_flight, timeout=60, what="five turns at the model", diagnostics=diagnostics)
            # and two queued behind turns of their threads (one waited for, one abandoned)
            waiting["b-t1-queued"] = site.send("b-t1-queued", t1)
            site.send("a-t2-queued", t2, wait=False)
            runs = wait_for(lambda: runs_of(workflow.pk, "b-t1-queued", "a-t2-queued"), timeout=60, what="the queued runs")
            assert {run.status for run in runs.values()} == {Run.Status.QUEUED}
            assert set(Run.objects.filter(input__in=in_flight).values_list("status", flat=True)) == {Run.Status.RUNNING}

            private_redis.kill()
            gate.release("a-")  # these turns end while Redis is gone
            waiting["c-during"] = site.send("c-during")  # and a message arrives meanwhile
            wait_for(
                lambda: all(r.is_done for r in runs_of(workflow.pk, "a-new", "a-t1").values()),
                timeout=60,
                what="the turns that end during the outage",
                diagnostics=diagnostics,
            )
            wait_for(lambda: runs_of(workflow.pk, "c-during"), timeout=60, what="the message sent during the outage")
            wait_for(
                lambda: "Connection to broker lost" in whole_log(stack["worker"]),
                timeout=30,
                what="the worker to notice",
                diagnostics=diagnostics,
            )
            private_redis.start()  # the same port, empty
            gate.release("b-")

            def settled():
                if unfinished(workflow.pk):
                    send_recover_turns(private_redis.url, older_than_s=1)
                    return False
                return True

            wait_for(settled, timeout=60, interval=3, what=f"every run to end: {unfinished(workflow.pk)}", diagnostics=diagnostics)
            # the worker lived through it (kombu 5.7 made it exit: see config/celery.py)
            assert stack["worker"].alive() and "Unrecoverable error" not in whole_log(stack["worker"]), stack["worker"].output()
            runs = {run.input: run for run in assert_consistent(workflow.pk, site)}
            assert set(runs) == {"first one", "first two", "b-t1-queued", "a-t2-queued", "c-during"} | in_flight
            for message, future in waiting.items():
                assert_answered(future.result(timeout=120), runs[message])
            # the turns that had reached the model ran to completion (nothing was given up on)
            assert all(runs[message].status == Run.Status.SUCCEEDED for message in in_flight), {m: runs[m].error for m in in_flight}

            # the stack works as before: a new message on an old conversation, with its history
            after = site.chat("after the restart", t1)
            assert after.status_code == 200 and after.json()["reply"] == "echo: after the restart", after.text
            transcript = [m["content"] for m in site.get(f"/api/threads/{t1}/messages/")]
            assert transcript[-2:] == ["after the restart", "echo: after the restart"]
            assert [m["content"] for m in fake_llm.requests[-1].messages[1:]] == transcript[:-1]
            assert_consistent(workflow.pk, site)
        finally:
            gate.release()
            site.close()


# --- database connections dropped ---------------------------------------------------------------
def terminate_other_backends() -> int:
    """Drop every other session on this database: the worker's and daphne's, as a failover or an
    administrator would."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


@full_stack_test
@pytest.mark.parametrize(
    "connections",
    [{}, {"SKEIN_DB_POOL": "false", "CONN_MAX_AGE": "300"}],
    ids=["pooled", "persistent"],  # the default pool, or Django's own persistent connections
)
def test_database_connections_dropped_mid_turn(require_postgres, require_redis, user, provider, fake_llm, tmp_path, connections):
    """Every PostgreSQL session of the worker and daphne is terminated while four turns wait on
    the model (holding their threads' turn locks, in Redis) and one more is queued behind them;
    the idle connections kept for later turns and requests die too. Nothing is sent to recover the
    turns: the worker must carry on by itself."""
    gate = Gate("held-")
    fake_llm.responder = gate
    workflow = chatbot(user, provider)
    env = full_mode_env(connection.settings_dict["NAME"], require_redis, **connections)
    with running_stack(env, tmp_path) as stack:
        worker = stack["worker"]
        site = Site(stack["base"], workflow.pk)
        diagnostics = lambda: worker.output() + stack["web"].output()  # noqa: E731
        try:
            t1 = site.chat("first one").json()["thread"]
            waiting = {
                "held-new-1": site.send("held-new-1"),
                "held-new-2": site.send("held-new-2"),
                "held-t1": site.send("held-t1", t1),
            }
            site.send("held-abandoned", wait=False)
            in_flight = {"held-new-1", "held-new-2", "held-t1", "held-abandoned"}
            wait_for(lambda: gate.waiting() == in_flight, timeout=60, what="four turns at the model", diagnostics=diagnostics)
            waiting["held-t1-queued"] = site.send("held-t1-queued", t1)
            wait_for(lambda: runs_of(workflow.pk, "held-t1-queued"), timeout=60, what="the queued run")
            # the turn locks are held by the worker, in Redis (not by its database sessions)
            assert len(redis.Redis.from_url(require_redis).keys(f"{TEST_NAMESPACE}:turn-lock:*")) == 4

            assert terminate_other_backends() >= 1  # the sessions kept for later turns and requests
            gate.release()

            wait_for(
                lambda: not unfinished(workflow.pk),
                timeout=60,
                interval=0.5,
                what=f"every run to end: {unfinished(workflow.pk)}",
                diagnostics=diagnostics,
            )
            runs = {run.input: run for run in assert_consistent(workflow.pk, site)}
            assert set(runs) == {"first one", "held-t1-queued"} | in_flight
            assert all(run.status == Run.Status.SUCCEEDED for run in runs.values()), {r.input: r.error for r in runs.values()}
            for message, future in waiting.items():
                assert_answered(future.result(timeout=120), runs[message])
            # the drop interrupted none of them: a turn at the model holds no database connection,
            # and its final transaction took a live one (the pool checks them; else a new one)
            assert all(runs[message].attempts == 1 for message in in_flight), {m: runs[m].attempts for m in in_flight}

            after = site.chat("after the drop", t1)
            assert after.status_code == 200 and after.json()["reply"] == "echo: after the drop", after.text
            assert_consistent(workflow.pk, site)
            assert worker.alive() and stack["web"].alive()
        finally:
            gate.release()
            site.close()


# --- the pieces, without processes --------------------------------------------------------------
class Lost(Exception):
    """What psycopg raises when the server terminated the session (SQLSTATE 57P01)."""

    sqlstate = "57P01"


def db_error(kind, sqlstate: str | None):
    cause = Lost("terminating connection due to administrator command")
    cause.sqlstate = sqlstate
    error = kind(str(cause))
    error.__cause__ = cause
    return error


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)  # outside a transaction, as a worker's task is
@pytest.mark.parametrize(
    "error, retried",
    [
        (lambda: db_error(OperationalError, "57P01"), True),  # admin shutdown: pg_terminate_backend
        (lambda: db_error(OperationalError, "08006"), True),  # connection failure
        (lambda: db_error(OperationalError, None), True),  # psycopg: "the connection is closed"
        (lambda: db_error(InterfaceError, None), True),
        (lambda: db_error(OperationalError, "57014"), False),  # a cancelled statement is not a lost connection
        (lambda: db_error(IntegrityError, "23505"), False),
    ],
    ids=["admin-shutdown", "connection-failure", "connection-closed", "interface-error", "statement-cancelled", "integrity-error"],
)
def test_a_turn_is_taken_up_again_only_when_its_connection_was_lost(require_postgres, monkeypatch, error, retried):
    from runs import tasks, turns

    calls = []

    def turn_process(*, run_id):
        calls.append(run_id)
        if len(calls) == 1:
            raise error()

    monkeypatch.setattr(turns, "turn_process", turn_process)
    monkeypatch.setattr(tasks.time, "sleep", lambda seconds: None)
    if retried:
        tasks.run_turn.run(7)
        assert calls == [7, 7]
    else:
        with pytest.raises(type(error())):
            tasks.run_turn.run(7)
        assert calls == [7]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_turn_that_keeps_losing_its_connection_fails_its_task_in_the_end(require_postgres, monkeypatch):
    from runs import tasks, turns

    calls = []

    def turn_process(*, run_id):
        calls.append(run_id)
        raise db_error(OperationalError, "57P01")

    monkeypatch.setattr(turns, "turn_process", turn_process)
    monkeypatch.setattr(tasks.time, "sleep", lambda seconds: None)
    with pytest.raises(OperationalError):
        tasks.run_turn.run(7)
    assert len(calls) == tasks.CONNECTION_RETRIES + 1  # then beat's recover_turns has it


@pytest.mark.django_db(transaction=True)  # as in a request: no transaction around the wait
def test_waiting_for_a_turn_survives_lost_connections_and_lost_signals(settings, monkeypatch, user, provider):
    """The request waits on through broken Redis and database connections, and a run that ended
    without its signal (lost with a restarted Redis) is seen at the next slice, not after 300 s."""
    import redis

    from runs import waiting as waits

    settings.FULL_MODE = True
    run = Run(pk=41, status=Run.Status.RUNNING)
    slices = []

    def run_wait(*, run, timeout):
        slices.append(timeout)
        if len(slices) == 1:
            raise redis.exceptions.ConnectionError("Connection closed by server.")
        if len(slices) == 2:
            raise db_error(OperationalError, "57P01")
        if len(slices) == 4:
            run.status = Run.Status.SUCCEEDED  # no signal came: the slice ran out and the run was read
        return run

    monkeypatch.setattr(waits, "run_wait", run_wait)
    monkeypatch.setattr(waits.time, "sleep", lambda seconds: None)
    assert waits.turn_wait(run=run, timeout=300).status == Run.Status.SUCCEEDED
    assert len(slices) == 4 and all(1 <= timeout <= waits.SLICE_S for timeout in slices)


@pytest.mark.django_db(transaction=True)
def test_waiting_gives_up_at_its_bound_and_the_client_gets_a_clear_503(settings, monkeypatch, api, user, provider):
    import redis

    from runs import waiting as waits

    settings.FULL_MODE = True
    workflow = chatbot(user, provider)

    def run_wait(*, run, timeout):
        raise redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    clock = iter(range(0, 10_000, 100))
    monkeypatch.setattr(waits, "run_wait", run_wait)
    monkeypatch.setattr(waits.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(waits.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(runs, "chat_start", lambda **kwargs: Run(pk=5, status=Run.Status.QUEUED))
    response = api.post(f"/api/workflows/{workflow.pk}/chat/", {"message": "hi"}, format="json")
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert response.json() == {"detail": "Redis is unavailable right now; try again in a moment", "code": "unavailable"}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "error, service",
    [
        (lambda: db_error(OperationalError, "57P01"), "the database"),
        (lambda: __import__("kombu.exceptions").exceptions.OperationalError("Error 111 connecting"), "the task queue"),
        (lambda: __import__("redis").exceptions.TimeoutError("Timeout reading from socket"), "Redis"),
    ],
    ids=["database", "broker", "redis"],
)
def test_a_backing_service_that_is_down_is_a_json_503_not_a_500(monkeypatch, api, user, provider, error, service):
    workflow = chatbot(user, provider)

    def chat_start(**kwargs):
        raise error()

    monkeypatch.setattr(runs, "chat_start", chat_start)
    response = api.post(f"/api/workflows/{workflow.pk}/chat/", {"message": "hi"}, format="json")
    assert response.status_code == 503 and response["Content-Type"] == "application/json"
    assert response.json()["detail"] == f"{service} is unavailable right now; try again in a moment"


def read_sse(response) -> list[dict]:
    async def read():
        return b"".join([chunk async for chunk in response.streaming_content])

    found = []
    for block in async_to_sync(read)().decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.split("\n") if line and not line.startswith(":"))
        if lines:
            found.append({"type": lines["event"], "data": json.loads(lines["data"])})
    return found


@pytest.mark.django_db(transaction=True)  # the turn runs in another thread
@pytest.mark.parametrize("fault", ["last event lost", "channel layer failed"])
def test_a_stream_ends_with_the_runs_outcome_although_its_events_were_lost(fault, api, user, provider, monkeypatch, settings):
    """The SSE stream normally ends on the run's last event; with Redis restarted that event can
    be lost (and receiving from the layer can fail): the stream reads the outcome from the
    database at its next heartbeat instead of waiting out SKEIN_CHAT_WAIT_S."""
    from channels.layers import InMemoryChannelLayer

    from runs import events
    from runs import streams as stream

    settings.SKEIN_CHAT_WAIT_S = 20
    monkeypatch.setattr(stream, "HEARTBEAT_S", 0.2)
    if fault == "last event lost":
        publish = events.publish

        def lossy(event_type, data, **kwargs):
            if event_type != events.RUN_FINISHED:
                publish(event_type, data, **kwargs)

        monkeypatch.setattr(events, "publish", lossy)
    else:
        import redis

        receive, failed = InMemoryChannelLayer.receive, []

        async def flaky(self, channel):
            if not failed:
                failed.append(channel)
                raise redis.exceptions.ConnectionError("Connection closed by server.")
            return await receive(self, channel)

        monkeypatch.setattr(InMemoryChannelLayer, "receive", flaky)
    workflow = chatbot(user, provider)
    started = time.monotonic()
    response = api.post(f"/api/workflows/{workflow.pk}/chat/stream/", {"message": "hi"}, format="json")
    found = read_sse(response)
    assert [e["type"] for e in found][0] == "accepted" and found[-1]["type"] == "run.finished", found
    assert found[-1]["data"] == {"run": found[0]["data"]["run"], "reply": "echo: hi", "warnings": [], "cut": False}
    assert time.monotonic() - started < 15  # well before the 20 s bound


# --- a turn at the model holds no database connection ---------------------------------------------
WORKER_APP_NAME = "skein-test-worker"


def worker_sessions() -> list[str]:
    """The states of the worker's PostgreSQL sessions on the test database (its PGAPPNAME)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT state FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s", [WORKER_APP_NAME])
        return [row[0] for row in cursor.fetchall()]


@full_stack_test
def test_turns_waiting_on_a_hung_model_hold_no_database_connection(require_postgres, require_redis, user, provider, fake_llm, tmp_path):
    """Twelve turns hang at the model in a worker whose connection pool has two connections: all
    twelve reach the model (a turn that kept its connection would wait for the pool instead), and
    meanwhile the worker has at most the pool's two sessions open, none of them in a query or a
    transaction. Once the model answers, every turn ends once, in order."""
    gate = Gate("hung-")
    fake_llm.responder = gate
    workflow = chatbot(user, provider)
    env = full_mode_env(connection.settings_dict["NAME"], require_redis)
    worker = start_worker({**env, "SKEIN_DB_POOL_SIZE": "2", "PGAPPNAME": WORKER_APP_NAME}, tmp_path, concurrency=16)
    web, base = start_daphne(env, tmp_path)
    site = Site(base, workflow.pk)
    diagnostics = lambda: worker.output() + web.output()  # noqa: E731
    try:
        t1 = site.chat("first one").json()["thread"]
        hung = {f"hung-{i}" for i in range(12)}
        waiting = {message: site.send(message, t1 if message == "hung-0" else None) for message in sorted(hung)}
        wait_for(lambda: gate.waiting() == hung, timeout=60, what="twelve turns at the model", diagnostics=diagnostics)
        waiting["hung-queued"] = site.send("hung-queued", t1)  # behind hung-0 on its thread
        wait_for(lambda: runs_of(workflow.pk, "hung-queued"), timeout=60, what="the queued run")
        # the turns' short writes are over: every session the worker has open is idle in its pool
        sessions = wait_for(
            lambda: (s := worker_sessions()) and set(s) == {"idle"} and s,
            timeout=10,
            what="idle sessions",
            diagnostics=lambda: str(worker_sessions()),
        )
        assert len(sessions) <= 2, sessions
        assert Run.objects.filter(workflow_id=workflow.pk, status=Run.Status.RUNNING).count() == 12

        gate.release()
        wait_for(lambda: not unfinished(workflow.pk), timeout=60, interval=0.5, what="every run to end", diagnostics=diagnostics)
        runs = {run.input: run for run in assert_consistent(workflow.pk, site)}
        for message, future in waiting.items():
            assert_answered(future.result(timeout=120), runs[message])
        assert all(run.status == Run.Status.SUCCEEDED and run.attempts == 1 for run in runs.values())
        assert len(worker_sessions()) <= 2
    finally:
        gate.release()
        site.close()
        web.stop()
        worker.stop()


# --- many waiting callers, one daphne ---------------------------------------------------------------
WEB_APP_NAME = "skein-test-web"


def process_threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def waiting_stack(redis_url: str, tmp_path, *, worker_threads: int, views: int):
    """A worker and one daphne (a pool of four connections, ``views`` view threads) for the tests
    of many waiting callers: (worker, web, base URL, alice's token, daphne's threads when idle)."""
    env = full_mode_env(connection.settings_dict["NAME"], redis_url)
    worker = start_worker(env, tmp_path, concurrency=worker_threads)
    web, base = start_daphne({**env, "SKEIN_DB_POOL_SIZE": "4", "PGAPPNAME": WEB_APP_NAME, "SKEIN_WEB_THREADS": str(views)}, tmp_path)
    token = httpx.post(f"{base}/api/auth/token/", json={"username": "alice", "password": "alice-password"}, timeout=60).json()["token"]
    return worker, web, base, token, process_threads(web.proc.pid)


def waiting_client(base: str, token: str, *, connections: int) -> httpx.AsyncClient:
    """Alice's client for many callers at once: a connection each, waiting long for its answer."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=0)
    return httpx.AsyncClient(base_url=base, headers={"Authorization": f"Token {token}"}, timeout=WAITING, limits=limits)


def sessions_of(application_name: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s", [application_name]
        )
        return cursor.fetchone()[0]


@full_stack_test
def test_three_hundred_waiting_chat_requests_cost_one_daphne_no_thread_each(
    require_postgres, require_redis, user, provider, fake_llm, tmp_path
):
    """300 chat requests wait at once on one daphne process (16 turns at a held model, the rest
    queued on the worker): daphne serves them with a handful of threads and at most its pool's
    four database connections, and every caller gets its own reply once the model answers."""
    import asyncio

    gate = Gate("many-")
    fake_llm.responder = gate
    workflow = chatbot(user, provider)
    views = 16  # the web process's view threads (config/handlers.py): what arriving requests share
    worker, web, base, token, idle_threads = waiting_stack(require_redis, tmp_path, worker_threads=16, views=views)
    answers: dict[int, object] = {}

    async def callers():
        async with waiting_client(base, token, connections=300) as http:

            async def call(i):
                await asyncio.sleep(i * 0.01)  # arriving over 3 s: what is measured is the wait, not one instant's accepts
                try:
                    answers[i] = await http.post(f"/api/workflows/{workflow.pk}/chat/", json={"message": f"many-{i}"})
                except Exception as exc:  # noqa: BLE001 - reported by the assertions below
                    answers[i] = exc

            await asyncio.gather(*(call(i) for i in range(300)))

    calling = threading.Thread(target=asyncio.run, args=(callers(),))
    calling.start()
    peak = {"sessions": 0, "arriving threads": 0, "waiting threads": 0}
    try:

        def all_waiting():
            peak["arriving threads"] = max(peak["arriving threads"], process_threads(web.proc.pid))
            peak["sessions"] = max(peak["sessions"], sessions_of(WEB_APP_NAME))
            return Run.objects.filter(workflow_id=workflow.pk).count() == 300 and len(gate.waiting()) == 16

        wait_for(
            all_waiting,
            timeout=180,
            interval=0.2,
            what="300 waiting requests",
            diagnostics=lambda: f"answered early: {list(answers.items())[:5]}\n" + web.output() + worker.output(),
        )
        # Every request has been handled up to its wait (its run exists). The threads Django gave
        # the requests while it handled them are gone: sample a while (the last views' threads end).
        for _ in range(20):
            peak["sessions"] = max(peak["sessions"], sessions_of(WEB_APP_NAME))
            time.sleep(0.1)
        waiting_threads = [process_threads(web.proc.pid) for _ in range(10)]
        peak["waiting threads"] = max(waiting_threads)
        assert not answers  # nobody was answered before the model was
        gate.release()
        calling.join(timeout=240)
        assert not calling.is_alive()
        for i in range(300):
            response = answers[i]
            assert not isinstance(response, Exception), (i, response)
            assert response.status_code == 200 and response.json()["reply"] == f"echo: many-{i}", (i, response.text)
        assert peak["waiting threads"] < idle_threads + 20, (idle_threads, peak)  # not one per waiting request
        # Nor one per arriving request: they share the view threads (Django alone: 120 to 295 here).
        assert peak["arriving threads"] <= idle_threads + views + 2, (idle_threads, peak)
        assert peak["sessions"] <= 4, peak
        print(f"daphne: {idle_threads} threads idle; {peak}")
    finally:
        gate.release()
        calling.join(timeout=60)
        web.stop()
        worker.stop()


@full_stack_test
def test_streamed_and_openai_compatible_answers_waiting_at_once_hold_no_thread_each(
    require_postgres, require_redis, user, provider, fake_llm, tmp_path
):
    """Sixty callers wait at once on one daphne, their turns held at the model: twenty SSE streams
    (``/chat/stream/``), twenty ``/v1/chat/completions`` with ``stream`` and twenty without.
    daphne's threads stay within its idle count and its pools' sizes, not one per caller, and each
    caller gets its own answer once the model answers."""
    import asyncio

    gate = Gate("held-")
    fake_llm.responder = gate
    workflow = chatbot(user, provider)
    services.workflow_publish(workflow=workflow)
    views = 8
    worker, web, base, token, idle_threads = waiting_stack(require_redis, tmp_path, worker_threads=64, views=views)
    answers: dict[str, str] = {}

    async def callers():
        async with waiting_client(base, token, connections=100) as http:

            async def sse(i):
                text = f"held-sse-{i}"
                async with http.stream("POST", f"/api/workflows/{workflow.pk}/chat/stream/", json={"message": text}) as response:
                    body = "".join([chunk async for chunk in response.aiter_text()])
                answers[text] = body

            async def openai(i, stream):
                text = f"held-v1{'s' if stream else ''}-{i}"
                request = {"model": str(workflow.pk), "messages": [{"role": "user", "content": text}], "stream": stream}
                async with http.stream(
                    "POST", "/v1/chat/completions", json=request, headers={"Authorization": f"Bearer {token}"}
                ) as response:
                    body = "".join([chunk async for chunk in response.aiter_text()])
                answers[text] = body

            calls = [sse(i) for i in range(20)] + [openai(i, True) for i in range(20)] + [openai(i, False) for i in range(20)]
            results = await asyncio.gather(*calls, return_exceptions=True)
            for result in results:
                if isinstance(result, Exception):
                    answers.setdefault("errors", []).append(repr(result))

    calling = threading.Thread(target=asyncio.run, args=(callers(),))
    calling.start()
    try:
        wait_for(
            lambda: len(gate.waiting()) == 60,
            timeout=120,
            interval=0.2,
            what="60 turns at the model",
            diagnostics=lambda: f"{len(gate.waiting())} at the model; {answers}\n" + web.output() + worker.output(),
        )
        waiting_threads = max(process_threads(web.proc.pid) for _ in range(10))
        assert not answers  # nobody was answered before the model was
        gate.release()
        calling.join(timeout=120)
        assert not calling.is_alive()
        assert "errors" not in answers, answers["errors"]
        for i in range(20):
            assert f"echo: held-sse-{i}" in answers[f"held-sse-{i}"] and "run.finished" in answers[f"held-sse-{i}"]
            streamed = answers[f"held-v1s-{i}"]
            assert streamed.rstrip().endswith("data: [DONE]")
            assert (
                "".join(
                    json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
                    for line in streamed.splitlines()
                    if line.startswith("data: {") and json.loads(line[6:]).get("choices")
                )
                == f"echo: held-v1s-{i}"
            )
            assert json.loads(answers[f"held-v1-{i}"])["choices"][0]["message"]["content"] == f"echo: held-v1-{i}"
        print(f"daphne: {idle_threads} threads idle, {waiting_threads} while 60 callers waited")
        # Bounded by its pools (the view threads, the threads that start streamed turns), which
        # stay whatever the number of callers: Django's own handler had a thread per caller (67+).
        assert waiting_threads <= idle_threads + views + streams.turn_executor._max_workers + 2, (idle_threads, waiting_threads)
    finally:
        gate.release()
        calling.join(timeout=60)
        web.stop()
        worker.stop()
