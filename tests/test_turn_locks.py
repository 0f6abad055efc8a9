"""The full mode's turn lock (Redis, runs/locks.py on core/backends/full.py) and the fencing of a
turn's commit (runs/turns.py): a dead holder's lock is taken over, a live holder's is not, a holder never
releases another's lock, and a holder that lost its lock never commits over the new holder."""

from __future__ import annotations

import os
import threading

import pytest
import redis

from core.backends import full as full_backend
from runs import locks, turns
from runs.models import Message, Run, Thread
from tests.conftest import TEST_REDIS_URL
from tests.fakellm import Reply
from tests.graphs import chat_graph
from tests.stack import wait_for
from workflows import services
from workflows import services as workflow_services

TTL_S = 1.5


@pytest.fixture
def full_mode_locks(settings, require_redis):
    """The lock module in the full mode, on the test Redis, in a namespace of this test's own."""
    settings.REDIS_URL = require_redis
    settings.FULL_MODE = True
    settings.SKEIN_NAMESPACE = f"skein-locks-{os.getpid()}-{threading.get_ident()}"
    settings.SKEIN_TURN_LOCK_TTL_S = TTL_S
    client = redis.Redis.from_url(TEST_REDIS_URL)
    yield client, f"{settings.SKEIN_NAMESPACE}:turn-lock:{locks.THREAD_SCOPE}:7"
    for key in client.scan_iter(f"{settings.SKEIN_NAMESPACE}:*"):
        client.delete(key)


pytestmark = pytest.mark.redis


def test_a_dead_holders_lock_is_taken_over_once_it_expires(full_mode_locks):
    client, key = full_mode_locks
    client.set(key, "a-worker-that-died", px=int(TTL_S * 1000))  # what a kill -9 leaves: no heartbeat
    with locks.try_turn_lock(locks.THREAD_SCOPE, 7) as lock:
        assert not lock  # not yet: it may be alive
    with locks.try_turn_lock(locks.THREAD_SCOPE, 7, wait_s=locks.takeover_wait_s()) as lock:
        assert lock and not lock.lost
        assert client.get(key).decode() == lock.token
    assert client.get(key) is None  # released by its holder


def test_a_live_holders_lock_is_renewed_and_never_taken(full_mode_locks):
    client, key = full_mode_locks
    with locks.try_turn_lock(locks.THREAD_SCOPE, 7) as held:
        assert held
        # a caller waiting longer than the TTL (three times over) never gets it: the heartbeat renews it
        with locks.try_turn_lock(locks.THREAD_SCOPE, 7, wait_s=3 * TTL_S) as other:
            assert not other
        assert client.get(key).decode() == held.token and not held.lost
    with locks.try_turn_lock(locks.THREAD_SCOPE, 7) as after:
        assert after


def test_a_holder_that_lost_its_lock_knows_it_and_never_releases_the_new_holders(full_mode_locks):
    client, key = full_mode_locks
    with locks.try_turn_lock(locks.THREAD_SCOPE, 7) as stale:
        assert stale
        client.set(key, "the-new-holder", px=60_000)  # its lock expired while it stalled; someone took it
        wait_for(lambda: stale.lost, timeout=5, what="the heartbeat to see the lock lost")
    assert client.get(key) == b"the-new-holder"  # compare-and-delete: not the stale holder's to delete


def test_after_a_redis_restart_the_heartbeat_takes_a_held_lock_back(full_mode_locks):
    client, key = full_mode_locks
    with locks.try_turn_lock(locks.THREAD_SCOPE, 7) as held:
        client.delete(key)  # Redis restarted empty
        with locks.try_turn_lock(locks.THREAD_SCOPE, 8):
            pass  # other locks go on meanwhile
        wait_for(lambda: client.get(key) == held.token.encode(), timeout=5, what="the heartbeat to take the lock back")
        assert not held.lost


# --- fencing ----------------------------------------------------------------------------------------
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_stale_holders_commit_is_refused(require_postgres, user, provider, fake_llm):
    """Holder A executes a turn and hangs at the model; its lock is lost, and holder B (another
    worker, here a direct call) takes the run over and finishes it. When A's model answers at
    last, A's commit is refused: the run, its steps, the transcript and the memory hold B's turn
    once, and A stops draining the thread (its turn loop ends without an error)."""
    from django.db import connection

    from memory.models import History

    a_at_model, a_released = threading.Event(), threading.Event()

    def respond(request):
        if not a_at_model.is_set():
            a_at_model.set()
            a_released.wait(timeout=30)
            return Reply(text="A's late answer")
        return Reply(text=f"echo: {request.last_user}")

    fake_llm.responder = respond
    workflow = services.workflow_create(owner=user, name="fenced", graph=chat_graph(provider.pk, memory={"type": "memory.buffer"}))
    thread = Thread.objects.create(workflow=workflow, owner=user, title="fenced")
    version = workflow_services.draft_snapshot(workflow=workflow)
    run = Run.objects.create(workflow=workflow, version=version, thread=thread, trigger="chat", trigger_node="chat", input="hello")
    outcome = {}

    def holder_a():
        try:
            turns.turn_process(run_id=run.pk)
            outcome["a"] = "returned"
        except Exception as exc:  # noqa: BLE001 - the test reports what A raised
            outcome["a"] = exc
        finally:
            connection.close()

    a = threading.Thread(target=holder_a)
    a.start()
    try:
        assert a_at_model.wait(timeout=30)
        assert Run.objects.get(pk=run.pk).attempts == 1
        turns.run_execute(run_id=run.pk)  # B: finds the run RUNNING, takes it over (attempts 2) and commits
        run.refresh_from_db()
        assert (run.status, run.output, run.attempts) == ("succeeded", "echo: hello", 2)
    finally:
        a_released.set()
        a.join(timeout=30)
    assert outcome["a"] == "returned"

    run.refresh_from_db()
    assert (run.status, run.output, run.attempts) == ("succeeded", "echo: hello", 2)  # B's, untouched by A
    assert sorted(run.steps.values_list("node", flat=True)) == ["agent", "chat", "out"]
    transcript = [(m.role, m.content) for m in Message.objects.filter(thread=thread).order_by("seq")]
    assert transcript == [("user", "hello"), ("assistant", "echo: hello")]
    history = History.objects.get(workflow=workflow, kind="global", key=f"thread:{thread.pk}")
    assert [(m.role, m.content) for m in history.messages.order_by("seq")] == transcript
    thread.refresh_from_db()
    assert thread.last_seq == 2


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_stale_finish_raises_turn_superseded(require_postgres, user, provider, fake_llm):
    """The fencing check itself: a finish whose attempts moved on writes nothing."""
    from runs.runtime import TurnRuntime

    workflow = services.workflow_create(owner=user, name="fenced", graph=chat_graph(provider.pk))
    thread = Thread.objects.create(workflow=workflow, owner=user, title="fenced")
    version = workflow_services.draft_snapshot(workflow=workflow)
    run = Run.objects.create(
        workflow=workflow,
        version=version,
        thread=thread,
        trigger="chat",
        trigger_node="chat",
        input="x",
        status=Run.Status.RUNNING,
        attempts=1,
    )
    stale = Run.objects.select_related("workflow", "version", "thread").get(pk=run.pk)
    Run.objects.filter(pk=run.pk).update(attempts=2)  # taken over meanwhile
    with pytest.raises(turns.TurnSuperseded):
        turns._finish(stale, reply="stale", runtime=TurnRuntime(stale))
    run.refresh_from_db()
    assert (run.status, run.output) == ("running", "")
    assert not Message.objects.filter(thread=thread).exists()


def test_a_released_lock_is_never_brought_back_by_a_renewal_in_flight(full_mode_locks, monkeypatch):
    """The heartbeat is renewing a lock (it takes back a lock that vanished, for Redis restarts)
    when its holder releases it: the release waits for the renewal, so nobody is left holding a
    lock whose holder is gone (its thread's queued turns would wait for nobody)."""
    client, key = full_mode_locks
    renew, release = full_backend._scripts(TEST_REDIS_URL)
    renewing, go = threading.Event(), threading.Event()

    def slow_renew(**kwargs):
        renewing.set()
        go.wait(timeout=5)
        return renew(**kwargs)

    monkeypatch.setattr(full_backend, "_scripts", lambda url: (slow_renew, release))
    with locks.try_turn_lock(locks.THREAD_SCOPE, 7) as held:
        assert held and renewing.wait(timeout=5)  # the heartbeat is in the middle of renewing it
        threading.Timer(0.3, go.set).start()
    assert client.get(key) is None
    go.set()
    with locks.try_turn_lock(locks.THREAD_SCOPE, 7) as again:
        assert again  # free: not taken back for the holder that left
