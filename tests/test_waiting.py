"""Waiting requests share one Redis subscription per process (runs/waiting.py, core/backends/full.py).

Needs Redis (127.0.0.1:6379 or SKEIN_TEST_REDIS_URL). Hundreds of chat requests wait at once in
the full mode; each used to hold a Redis connection, and redis-py's pool stops at 100.
"""

from __future__ import annotations

import threading
import uuid

import pytest
import redis

from runs import waiting
from tests.stack import wait_for
from workflows import services as workflow_services

WAITERS = 150  # more than redis-py's default pool of 100 connections


@pytest.fixture
def signals(settings, require_redis):
    settings.FULL_MODE = True
    settings.REDIS_URL = require_redis
    settings.SKEIN_NAMESPACE = f"skein-test-waiting-{uuid.uuid4().hex[:8]}"
    signals = waiting.run_signals()  # the full mode's, on this test's own channel
    yield signals
    signals.close()
    assert signals._listener is None or not signals._listener.is_alive()


def _clients(url: str) -> int:
    return len(redis.Redis.from_url(url).client_list())


def test_many_waiters_share_one_subscription_and_each_wakes_for_its_own_run(signals, require_redis):
    results: dict[int, bool] = {}

    def wait(run_id: int) -> None:
        results[run_id] = signals.wait(run_id, 30, is_done=lambda: False)

    before = _clients(require_redis)
    threads = [threading.Thread(target=wait, args=(run_id,)) for run_id in range(1, WAITERS + 1)]
    for thread in threads:
        thread.start()
    wait_for(lambda: len(signals._waiters) == WAITERS, timeout=30, what="every waiter registered")
    # One subscription for all of them (plus at most the publisher's connection below).
    assert _clients(require_redis) - before <= 1

    for run_id in range(1, WAITERS + 1, 2):  # only the odd runs finish
        waiting.signal_run_done(run_id)
    wait_for(lambda: len(results) == (WAITERS + 1) // 2, timeout=30, what="the signalled waiters woke")
    assert sorted(results) == list(range(1, WAITERS + 1, 2)) and all(results.values())

    for run_id in range(2, WAITERS + 1, 2):
        waiting.signal_run_done(run_id)
    for thread in threads:
        thread.join(timeout=30)
    assert len(results) == WAITERS and all(results.values())
    assert not signals._waiters  # nothing left registered


def test_a_run_done_before_the_wait_returns_at_once_and_an_unsignalled_one_times_out(signals):
    assert signals.wait(1, 30, is_done=lambda: True) is True
    assert signals.wait(2, 0.3, is_done=lambda: False) is False
    assert not signals._waiters


@pytest.mark.django_db(transaction=True)
def test_a_signal_carries_the_runs_outcome_to_a_coroutine_waiting_for_it(signals, monkeypatch, user, provider):
    """The worker's signal holds the run as it was stored, so a deferred wait answers without
    reading the database; an outcome too large for a signal is read as before."""
    import asyncio

    from runs.models import Run
    from tests.graphs import chat_graph
    from workflows import services

    monkeypatch.setattr(waiting, "run_signals", lambda: signals)
    workflow = services.workflow_create(owner=user, name="signalled", graph=chat_graph(provider.pk))
    version = workflow_services.draft_for_run(workflow=workflow)
    small, large = (Run.objects.create(workflow=workflow, version=version, trigger="chat", input="hi") for _ in range(2))
    # The small run stays queued in the database: a waiter answered "succeeded" got it from the signal.
    small.status, small.output, small.prompt_tokens = Run.Status.SUCCEEDED, "carried by the signal", 7
    large.status, large.output = Run.Status.SUCCEEDED, "x" * (waiting.MAX_SIGNAL_BYTES + 1)

    async def scenario():
        waits = [asyncio.ensure_future(waiting.turn_wait_async(run_id=run.pk, timeout=30)) for run in (small, large)]
        await asyncio.to_thread(wait_for, lambda: len(signals._waiters) == 2, timeout=30, what="both waits registered")
        waiting.signal_run_done(small.pk, outcome=small)
        await asyncio.to_thread(Run.objects.filter(pk=large.pk).update, status=Run.Status.SUCCEEDED, output="read from the database")
        waiting.signal_run_done(large.pk, outcome=large)
        return await asyncio.gather(*waits)

    answered_small, answered_large = asyncio.run(scenario())
    assert (answered_small.pk, answered_small.status, answered_small.output, answered_small.prompt_tokens) == (
        small.pk,
        "succeeded",
        "carried by the signal",
        7,
    )
    assert answered_small.created == small.created
    assert answered_large.output == "read from the database"
