"""The full mode for real: daphne, a Celery worker (threads pool), Redis and PostgreSQL.

The test process only talks HTTP to daphne, like a user; the worker runs every turn and reaches
the fake model server over loopback."""

from __future__ import annotations

import concurrent.futures
import threading

import pytest

from tests.fakellm import Reply
from tests.graphs import chat_graph

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

SUMMARY_BOUND_S = 5


@pytest.fixture(scope="module")
def stack(require_postgres, require_redis, tmp_path_factory, django_db_setup, django_db_blocker):
    from django.db import connection

    from tests.stack import full_stack

    with django_db_blocker.unblock():
        name = connection.settings_dict["NAME"]
    # A short summarization bound, so hung summarizers are given up within the test's patience.
    with full_stack(
        name, require_redis, tmp_path_factory.mktemp("fullstack"), concurrency=16, SKEIN_SUMMARY_TIMEOUT_S=SUMMARY_BOUND_S
    ) as running:
        yield running


@pytest.fixture
def client(stack, user):
    from tests.stack import logged_in_client

    with logged_in_client(stack["base"]) as http:
        yield http


@pytest.fixture
def remote_chatbot(client, fake_llm):
    def make(memory=None, summarizer=None):
        provider = client.post(
            "/api/providers/", json={"name": "fake", "kind": "openai_compatible", "api_base": fake_llm.base_url, "api_key": "k"}
        ).json()
        graph = chat_graph(
            provider["id"], memory=memory, summarizer=summarizer if summarizer is None else {**summarizer, "provider": provider["id"]}
        )
        workflow = client.post("/api/workflows/", json={"name": "full", "graph": graph}).json()
        assert workflow["errors"] == []
        return workflow

    return make


def test_a_chat_turn_runs_on_the_worker(client, remote_chatbot, fake_llm, stack):
    workflow = remote_chatbot(memory={"type": "memory.buffer"})
    first = client.post(f"/api/workflows/{workflow['id']}/chat/", json={"message": "hello"})
    assert first.status_code == 200, first.text
    assert first.json()["reply"] == "echo: hello", stack["worker"].output()
    second = client.post(f"/api/workflows/{workflow['id']}/chat/", json={"message": "again", "thread": first.json()["thread"]}).json()
    assert second["reply"] == "echo: again"
    assert fake_llm.requests[-1].messages[1:] == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "echo: hello"},
        {"role": "user", "content": "again"},
    ]
    transcript = client.get(f"/api/threads/{first.json()['thread']}/messages/").json()
    assert [m["content"] for m in transcript] == ["hello", "echo: hello", "again", "echo: again"]
    run = client.get(f"/api/runs/{second['run']}/").json()
    assert [s["node"] for s in run["steps"]] == ["chat", "agent", "out"] and run["status"] == "succeeded"
    assert "run_turn" in stack["worker"].output()  # it really ran on the worker


def test_two_messages_at_once_on_one_thread_are_taken_in_turn(client, remote_chatbot, fake_llm):
    fake_llm.responder = lambda request: Reply(text=f"echo: {request.last_user}", delay=0.4)
    workflow = remote_chatbot(memory={"type": "memory.buffer"})
    thread = client.post(f"/api/workflows/{workflow['id']}/chat/", json={"message": "start"}).json()["thread"]

    def send(text):
        return client.post(f"/api/workflows/{workflow['id']}/chat/", json={"message": text, "thread": thread}).json()

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        replies = list(pool.map(send, ["a", "b", "c", "d"]))
    assert sorted(r["reply"] for r in replies) == ["echo: a", "echo: b", "echo: c", "echo: d"]
    transcript = [m["content"] for m in client.get(f"/api/threads/{thread}/messages/").json()]
    assert len(transcript) == 10 and len(set(transcript)) == 10
    # turns alternate: each user message is directly followed by its own reply
    assert all(transcript[i + 1] == f"echo: {transcript[i]}" for i in range(0, 10, 2))
    # and each turn saw the turns before it, in order: the model requests grow one turn at a time
    sizes = sorted(len(r.messages) for r in fake_llm.requests)
    assert sizes == [2, 4, 6, 8, 10]


def test_concurrent_turns_never_summarize_the_same_messages_twice(client, remote_chatbot, fake_llm):
    def respond(request):
        if request.model == "cheap-model":
            return Reply(text="SUMMARY", delay=0.2)
        return Reply(text=f"echo: {request.last_user}", delay=0.1)

    fake_llm.responder = respond
    workflow = remote_chatbot(
        memory={"type": "memory.summary", "max_messages": 4, "keep_last": 2, "llm_source": "external"},
        summarizer={"model": "cheap-model"},
    )
    thread = client.post(f"/api/workflows/{workflow['id']}/chat/", json={"message": "start"}).json()["thread"]
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        list(
            pool.map(
                lambda t: client.post(f"/api/workflows/{workflow['id']}/chat/", json={"message": t, "thread": thread}),
                [f"m{i}" for i in range(6)],
            )
        )
    from memory.models import Summarization

    covered = list(Summarization.objects.filter(status="ok").values_list("from_seq", "through_seq"))
    assert covered, "no summarization happened"
    seqs = [s for start, end in covered for s in range(start, end + 1)]
    assert len(seqs) == len(set(seqs)), covered
    assert len(client.get(f"/api/threads/{thread}/messages/").json()) == 14


def test_one_worker_holds_many_turns_waiting_on_models(client, remote_chatbot, fake_llm):
    """A slow model must not occupy a whole process: one worker has several calls in flight."""
    in_flight = 0
    peak = 0
    lock = threading.Lock()
    release = threading.Event()

    def respond(request):
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
            if in_flight >= 6:
                release.set()
        release.wait(timeout=20)  # hold every call until six are in flight at once (or give up)
        with lock:
            in_flight -= 1
        return Reply(text="done")

    fake_llm.responder = respond
    workflow = remote_chatbot()
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        results = list(
            pool.map(lambda i: client.post(f"/api/workflows/{workflow['id']}/chat/", json={"message": f"t{i}"}).json(), range(6))
        )
    assert [r["reply"] for r in results] == ["done"] * 6
    assert peak == 6


def test_a_hundred_messages_at_once_on_one_thread(client, remote_chatbot, fake_llm):
    """All are answered, the transcript holds 200 messages in order, each reply right after its message."""
    workflow = remote_chatbot()
    thread = client.post(f"/api/workflows/{workflow['id']}/chat/", json={"message": "m-start"}).json()["thread"]
    texts = [f"m{i:03d}" for i in range(100)]
    with concurrent.futures.ThreadPoolExecutor(100) as pool:
        answers = list(
            pool.map(lambda t: client.post(f"/api/workflows/{workflow['id']}/chat/", json={"message": t, "thread": thread}), texts)
        )
    assert all(a.status_code == 200 and a.json()["status"] == "succeeded" for a in answers), [
        a.text for a in answers if a.status_code != 200
    ][:3]
    transcript = [m["content"] for m in client.get(f"/api/threads/{thread}/messages/").json()][2:]
    assert len(transcript) == 200 and len(set(transcript)) == 200
    assert sorted(transcript[0::2]) == texts
    assert all(transcript[i + 1] == f"echo: {transcript[i]}" for i in range(0, 200, 2))


def test_a_hundred_threads_in_parallel_stay_isolated(client, remote_chatbot, fake_llm):
    workflow = remote_chatbot(memory={"type": "memory.buffer"})

    def converse(i):
        first = client.post(f"/api/workflows/{workflow['id']}/chat/", json={"message": f"I am user {i}"}).json()
        second = client.post(
            f"/api/workflows/{workflow['id']}/chat/", json={"message": f"who am I? ({i})", "thread": first["thread"]}
        ).json()
        return first["thread"], second

    with concurrent.futures.ThreadPoolExecutor(100) as pool:
        results = list(pool.map(converse, range(100)))
    assert len({thread for thread, _ in results}) == 100
    for i, (thread, second) in enumerate(results):
        assert second["reply"] == f"echo: who am I? ({i})"
        transcript = [m["content"] for m in client.get(f"/api/threads/{thread}/messages/").json()]
        assert transcript == [f"I am user {i}", f"echo: I am user {i}", f"who am I? ({i})", f"echo: who am I? ({i})"]
    # each second turn's model call saw only its own conversation
    seconds = [r for r in fake_llm.requests if r.last_user.startswith("who am I?")]
    assert len(seconds) == 100
    for request in seconds:
        i = request.last_user[len("who am I? (") : -1]
        assert request.messages[1:] == [
            {"role": "user", "content": f"I am user {i}"},
            {"role": "assistant", "content": f"echo: I am user {i}"},
            {"role": "user", "content": f"who am I? ({i})"},
        ]


def test_a_conversation_test_suite_runs_on_the_worker(client, remote_chatbot, fake_llm, stack):
    """Issue 17: a suite runs as Celery tasks on the real worker, tests in parallel in their own
    threads, one test's turns in order; the publish gate waits for it across processes."""
    import time

    workflow = remote_chatbot(memory={"type": "memory.buffer"})
    for name in ("ada", "grace", "alan"):
        created = client.post(
            f"/api/workflows/{workflow['id']}/tests/",
            json={
                "name": name,
                "turns": [
                    {"message": f"I am {name}", "expect": [{"reply_contains": name}]},
                    {
                        "message": "who am I?",
                        "expect": [
                            {"sent_contains": {"node": "agent", "text": f"I am {name}"}},
                            {"sent_excludes": {"node": "agent", "text": "I am " + ("grace" if name != "grace" else "ada")}},
                        ],
                    },
                ],
            },
        )
        assert created.status_code == 201, created.text
    started = client.post(f"/api/workflows/{workflow['id']}/tests/run/", json={})
    assert started.status_code == 202, started.text

    def finished(test_run_id):
        deadline = time.monotonic() + 120
        while True:
            run = client.get(f"/api/test-runs/{test_run_id}/").json()
            if run["status"] in ("passed", "failed", "error") or time.monotonic() > deadline:
                return run
            time.sleep(0.1)

    run = finished(started.json()["test_run"])
    assert run["status"] == "passed", (run, stack["worker"].output())
    assert len({r["thread"] for r in run["results"]}) == 3
    assert "conversation_tests.tasks.test_execute" in stack["worker"].output()  # it really ran on the worker

    # The gate: publishing waits for the worker to run the tests, and refuses on a failure.
    client.patch(f"/api/workflows/{workflow['id']}/tests/settings/", json={"publish_requires_passing": True})
    client.post(
        f"/api/workflows/{workflow['id']}/tests/",
        json={"name": "speaks french", "turns": [{"message": "hi", "expect": [{"reply_contains": "bonjour"}]}]},
    )
    refused = client.post(f"/api/workflows/{workflow['id']}/publish/")
    assert refused.status_code == 400 and [f["name"] for f in refused.json()["failures"]] == ["speaks french"], refused.text
    assert client.get(f"/api/workflows/{workflow['id']}/").json()["published_version"] is None

    # Before the database is emptied for the next test: the worker has ended every task it took
    # (each turn a test took inline is also delivered to it, and finds the turn done).
    import re

    from tests.stack import wait_for

    def worker_idle():
        log = stack["worker"].log_path.read_text(errors="replace")
        received = set(re.findall(r"Task [\w.]+\[([0-9a-f-]+)\] received", log))
        ended = set(re.findall(r"Task [\w.]+\[([0-9a-f-]+)\] (?:succeeded|failed|raised)", log))
        return received <= ended

    wait_for(worker_idle, timeout=60, what="the worker to end its tasks", diagnostics=stack["worker"].output)


def test_ten_hung_summarizations_never_delay_a_healthy_one_on_the_worker(client, remote_chatbot, fake_llm):
    """Ten workflows whose summarizer hangs, beside one whose summarizer answers, all on one worker:
    the healthy one summarizes at once; the hung ones fall back at the bound, and no request
    reaches their provider after it (no retry of an abandoned call)."""
    import time

    from memory.models import Summarization
    from tests.stack import wait_for

    def respond(request):
        if request.model == "hung-model":
            return Reply(text="too late", delay=3 * SUMMARY_BOUND_S)
        if request.model == "cheap-model":
            return Reply(text="SUMMARY")
        return Reply(text=f"echo: {request.last_user}")

    fake_llm.responder = respond
    memory = {"type": "memory.summary", "max_messages": 2, "keep_last": 0, "llm_source": "external"}
    hung = [remote_chatbot(memory=dict(memory), summarizer={"model": "hung-model"}) for _ in range(10)]
    healthy = remote_chatbot(memory=dict(memory), summarizer={"model": "cheap-model"})
    threads = {w["id"]: client.post(f"/api/workflows/{w['id']}/chat/", json={"message": "m1"}).json()["thread"] for w in [*hung, healthy]}

    def second_turn(workflow):
        return client.post(f"/api/workflows/{workflow['id']}/chat/", json={"message": "m2", "thread": threads[workflow["id"]]}).json()

    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        started = time.monotonic()
        pending = [pool.submit(second_turn, w) for w in hung]
        wait_for(lambda: len(fake_llm.requests_for("hung-model")) == 10, timeout=60, what="ten hung summarizations")
        quick = second_turn(healthy)
        hung_turns = [f.result(timeout=120) for f in pending]
    assert quick["warnings"] == [] and quick["reply"] == "echo: m2"
    assert Summarization.objects.filter(status="ok", model="cheap-model").count() == 1
    for turn in hung_turns:
        assert turn["status"] == "succeeded" and turn["reply"] == "echo: m2"
        assert f"did not answer within {SUMMARY_BOUND_S}s" in turn["warnings"][0]["message"]
    # A retry would come after an attempt's timeout plus a backoff: wait past that, then count.
    while time.monotonic() < started + SUMMARY_BOUND_S + 3:
        time.sleep(0.2)
    assert len(fake_llm.requests_for("hung-model")) == 10
