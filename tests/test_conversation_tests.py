"""Conversation tests (docs/conversation-tests.md#conversation-tests, issue 17) through the API against the fake model server: each
check kind passing and failing, fresh threads, bad input, save-as-test, files, limits."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.test import override_settings

from tests.conversation_helpers import checks_of, create_test, run_tests, start_run, wait_run
from tests.fakellm import Reply
from tests.graphs import chat_graph

pytestmark = pytest.mark.django_db(transaction=True)  # test runs execute in other threads


@pytest.fixture
def memory_bot(make_workflow, provider):
    return make_workflow(chat_graph(provider.pk, memory={"type": "memory.buffer"}))


def test_a_test_is_stored_as_written_and_listed(api, memory_bot):
    turns = [
        {"message": "my order is 42", "expect": [{"reply_contains": "42"}]},
        {"message": "what is my order?", "expect": [{"sent_contains": {"node": "agent", "text": "my order is 42"}}]},
    ]
    created = create_test(api, memory_bot["id"], turns, name="remembers the order")
    assert created["name"] == "remembers the order" and created["turns"] == turns and created["errors"] == []
    listed = api.get(f"/api/workflows/{memory_bot['id']}/tests/").json()
    assert [t["id"] for t in listed] == [created["id"]] and listed[0]["last"] is None
    assert api.get(f"/api/tests/{created['id']}/").json()["turns"] == turns

    changed = api.put(f"/api/tests/{created['id']}/", {"name": "renamed", "turns": turns[:1]}, format="json")
    assert changed.status_code == 200 and changed.json()["name"] == "renamed" and len(changed.json()["turns"]) == 1
    assert api.delete(f"/api/tests/{created['id']}/").status_code == 204
    assert api.get(f"/api/tests/{created['id']}/").status_code == 404


def test_every_check_kind_passes(api, memory_bot, fake_llm):
    turns = [
        {
            "message": "My name is Ada.",
            "expect": [
                {"reply_contains": "Ada"},
                {"reply_contains": "MY NAME"},  # reply checks ignore case
                {"reply_not_contains": "Grace"},
                {"reply_matches": r"^ECHO: my name is \w+\.$"},
                {"sent_contains": {"node": "agent", "text": "You are a test bot."}},
                {"sent_excludes": {"node": "agent", "text": "secret"}},
                {"sent_tokens_at_most": {"node": "agent", "tokens": 100}},
            ],
        },
        {"message": "Who am I?", "expect": [{"sent_contains": {"node": "agent", "text": "My name is Ada."}}]},
    ]
    create_test(api, memory_bot["id"], turns)
    run = run_tests(api, memory_bot["id"])
    assert run["status"] == "passed" and run["passed"] == 1 and run["failed"] == 0 and run["version"] == "draft", run
    [result] = run["results"]
    assert [t["reply"] for t in result["turns"]] == ["echo: My name is Ada.", "echo: Who am I?"]
    assert all(c["passed"] is True and c["status"] == "passed" for c in checks_of(run))
    assert run["prompt_tokens"] == 22 and run["completion_tokens"] > 0  # the fake server's usage, both turns


def test_every_check_kind_fails_and_says_why(api, memory_bot, fake_llm):
    turns = [
        {
            "message": "My name is Ada.",
            "expect": [
                {"reply_contains": "Grace"},
                {"reply_not_contains": "ADA"},  # in any case
                {"reply_matches": r"^hello"},
                {"sent_contains": {"node": "agent", "text": "not in the prompt"}},
                {"sent_excludes": {"node": "agent", "text": "test bot"}},
                {"sent_tokens_at_most": {"node": "agent", "tokens": 3}},
            ],
        },
    ]
    create_test(api, memory_bot["id"], turns)
    run = run_tests(api, memory_bot["id"])
    assert run["status"] == "failed" and run["failed"] == 1 and run["results"][0]["status"] == "failed"
    checks = checks_of(run)
    assert [c["passed"] for c in checks] == [False] * 6
    reply_contains, not_contains, matches, sent_contains, sent_excludes, tokens = checks
    assert "'Grace'" in reply_contains["detail"] and "echo: My name is Ada." in reply_contains["detail"]
    assert "not to contain 'ADA'" in not_contains["detail"]
    assert "/^hello/" in matches["detail"]
    sent = [{"role": "system", "content": "You are a test bot."}, {"role": "user", "content": "My name is Ada."}]
    assert sent_contains["sent"] == sent and "was not sent 'not in the prompt'" in sent_contains["detail"]
    assert sent_excludes["sent"] == sent and "message 1 of 2, system" in sent_excludes["detail"]
    assert tokens["sent"] == sent and tokens["tokens"] > 3 and "more than 3" in tokens["detail"]


def test_each_test_runs_in_a_fresh_thread(api, memory_bot, fake_llm):
    """Thread-keyed memory starts empty for every test, also when they run at the same time."""
    for name in ("alpha", "beta", "gamma"):
        create_test(
            api,
            memory_bot["id"],
            [
                {"message": f"I am {name}", "expect": []},
                {
                    "message": "who am I?",
                    "expect": [
                        {"sent_contains": {"node": "agent", "text": f"I am {name}"}},
                        *[
                            {"sent_excludes": {"node": "agent", "text": f"I am {other}"}}
                            for other in ("alpha", "beta", "gamma")
                            if other != name
                        ],
                    ],
                },
            ],
            name=name,
        )
    run = run_tests(api, memory_bot["id"])
    assert run["status"] == "passed", checks_of(run)
    threads = {r["thread"] for r in run["results"]}
    assert len(threads) == 3 and None not in threads
    for result in run["results"]:
        transcript = api.get(f"/api/threads/{result['thread']}/messages/").json()
        assert [m["content"] for m in transcript] == [
            f"I am {result['name']}",
            f"echo: I am {result['name']}",
            "who am I?",
            "echo: who am I?",
        ]


def test_seed_messages_apply_in_a_test_thread(api, make_workflow, provider):
    seeds = [{"role": "user", "content": "Say hi."}, {"role": "assistant", "content": "Hi!"}]
    workflow = make_workflow(chat_graph(provider.pk, memory={"type": "memory.window", "max_messages": 4, "seed_messages": seeds}))
    create_test(api, workflow["id"], [{"message": "hello", "expect": [{"sent_contains": {"node": "agent", "text": "Say hi."}}]}])
    assert run_tests(api, workflow["id"])["status"] == "passed"


# What the participant said about themselves, quoted, then the summarizer's narrative.
SUMMARY = 'Facts from the user (quoted, newest last):\n- "I am Ada"\n\nConversation so far:\nAda lives in Lisbon.'


def test_summary_contains_reads_the_running_summary(api, make_workflow, provider, fake_llm):
    fake_llm.responder = lambda r: Reply(text="Ada lives in Lisbon." if r.model == "cheap" else f"echo: {r.last_user}")
    workflow = make_workflow(
        chat_graph(
            provider.pk,
            memory={"type": "memory.summary", "max_messages": 4, "keep_last": 2, "llm_source": "external"},
            summarizer={"model": "cheap", "provider": provider.pk},
        )
    )
    turns = [
        {"message": "I am Ada", "expect": [{"summary_contains": {"memory": "mem", "text": "Lisbon"}}]},  # no summary yet
        {"message": "I live in Lisbon", "expect": []},
        {
            "message": "what do you know?",
            "expect": [
                {"summary_contains": {"memory": "mem", "text": "Lisbon"}},
                {"summary_contains": {"memory": "mem", "text": "Paris"}},
                {"sent_contains": {"node": "agent", "text": "Summary of the earlier conversation:\n" + SUMMARY}},
                {"sent_excludes": {"node": "agent", "text": "echo: I am Ada"}},  # summarized away (its words are quoted)
            ],
        },
    ]
    create_test(api, workflow["id"], turns)
    run = run_tests(api, workflow["id"])
    checks = checks_of(run)
    assert [c["passed"] for c in checks] == [False, True, False, True, True], checks
    assert "has no summary yet" in checks[0]["detail"]
    assert f"the summary is {SUMMARY!r}" in checks[2]["detail"]
    # the summarizer's tokens are the turns' own: they count in the test run's cost
    assert run["prompt_tokens"] == sum(t["prompt_tokens"] for t in run["results"][0]["turns"]) == 4 * 11


def test_checks_naming_what_the_workflow_lacks_are_saved_but_cannot_run(api, memory_bot, fake_llm):
    turns = [
        {
            "message": "hi",
            "expect": [
                {"sent_contains": {"node": "ghost", "text": "x"}},
                {"sent_contains": {"node": "out", "text": "x"}},
                {"summary_contains": {"memory": "mem", "text": "x"}},
                {"summary_contains": {"memory": "nowhere", "text": "x"}},
                {"judge": {"rubric": "polite", "model": "judge-model", "provider": 999999}},
            ],
        }
    ]
    created = create_test(api, memory_bot["id"], turns, name="broken")
    assert [(e["turn"], e["check"]) for e in created["errors"]] == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4)]
    messages = [e["message"] for e in created["errors"]]
    assert "no node 'ghost'" in messages[0] and "calls no model" in messages[1]
    assert "memory.buffer" in messages[2] and "no memory 'nowhere'" in messages[3] and "provider 999999" in messages[4]
    good = create_test(api, memory_bot["id"], [{"message": "hi", "expect": [{"reply_contains": "hi"}]}], name="good")
    calls = len(fake_llm.requests)
    run = run_tests(api, memory_bot["id"])
    by_name = {r["name"]: r for r in run["results"]}
    assert by_name["broken"]["status"] == "error" and "no node 'ghost'" in by_name["broken"]["error"] and by_name["broken"]["turns"] == []
    assert by_name["good"]["status"] == "passed" and run["status"] == "error" and run["errors"] == 1
    assert len(fake_llm.requests) == calls + 1  # only the good test ran
    assert {t["id"]: t["last"]["status"] for t in api.get(f"/api/workflows/{memory_bot['id']}/tests/").json()} == {
        created["id"]: "error",
        good["id"]: "passed",
    }


@pytest.mark.parametrize(
    "turns, where, text",
    [
        ([], (None, None), "at least one turn"),
        ("not a list", (None, None), "must be a list"),
        ([{"message": "", "expect": []}], (0, None), "needs a message"),
        ([{"message": "hi", "expect": [{"reply_has": "x"}]}], (0, 0), "unknown check kind 'reply_has'"),
        ([{"message": "hi", "expect": [{"reply_contains": "x", "reply_matches": "y"}]}], (0, 0), "exactly one kind"),
        (
            [{"message": "ok", "expect": []}, {"message": "hi", "expect": [{"reply_matches": "(unclosed"}]}],
            (1, 0),
            "invalid regular expression",
        ),
        ([{"message": "hi", "expect": [{"sent_contains": {"node": "agent"}}]}], (0, 0), "text"),
        ([{"message": "hi", "expect": [{"sent_tokens_at_most": {"node": "agent", "tokens": "many"}}]}], (0, 0), "tokens"),
        ([{"message": "hi", "expect": [{"judge": {"rubric": "be nice"}}]}], (0, 0), "model"),
        ([{"message": "hi", "expect": "reply_contains"}], (0, None), "list of checks"),
        ([{"message": "hi", "expect": [], "surprise": 1}], (0, None), "unknown field 'surprise'"),
    ],
)
def test_bad_scripts_are_refused_keyed_by_turn_and_check(api, memory_bot, turns, where, text):
    response = api.post(f"/api/workflows/{memory_bot['id']}/tests/", {"name": "bad", "turns": turns}, format="json")
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert any((e["turn"], e["check"]) == where and text in e["message"] for e in errors), errors
    assert api.get(f"/api/workflows/{memory_bot['id']}/tests/").json() == []


@override_settings(SKEIN_TEST_MAX_TURNS=3, SKEIN_TEST_MAX_CHECKS=2)
def test_script_limits(api, memory_bot):
    too_long = [{"message": f"m{i}", "expect": []} for i in range(4)]
    assert (
        "at most 3 turns"
        in api.post(f"/api/workflows/{memory_bot['id']}/tests/", {"name": "x", "turns": too_long}, format="json").json()["errors"][0][
            "message"
        ]
    )
    crowded = [{"message": "m", "expect": [{"reply_contains": "a"}] * 3}]
    response = api.post(f"/api/workflows/{memory_bot['id']}/tests/", {"name": "x", "turns": crowded}, format="json")
    assert response.status_code == 400 and "at most 2 checks" in response.json()["errors"][0]["message"]


def test_a_catastrophic_pattern_matches_in_linear_time(api, memory_bot, fake_llm):
    """(a|aa)+$ backtracks exponentially on a long run of a's in a backtracking engine; in RE2 it
    is a verdict like any other, and patterns RE2 cannot run are refused when the test is saved."""
    fake_llm.responder = lambda r: Reply(text="a" * 50_000 + "!")
    create_test(api, memory_bot["id"], [{"message": "go", "expect": [{"reply_matches": "(a|aa)+$"}, {"reply_matches": "^(a+)+!$"}]}])
    started = time.monotonic()
    run = run_tests(api, memory_bot["id"])
    assert [c["passed"] for c in checks_of(run)] == [False, True]
    assert time.monotonic() - started < 60  # a backtracking engine would not finish before the universe ends
    for pattern in ("(?=x)", r"(a)\1"):
        refused = api.post(
            f"/api/workflows/{memory_bot['id']}/tests/",
            {"name": "x", "turns": [{"message": "m", "expect": [{"reply_matches": pattern}]}]},
            format="json",
        )
        assert refused.status_code == 400 and "RE2" in refused.json()["errors"][0]["message"], pattern


def test_a_turn_that_fails_ends_its_test_as_an_error(api, memory_bot, fake_llm):
    fake_llm.responder = lambda r: Reply(status=401, text="bad key") if "boom" in r.last_user else Reply(text=f"echo: {r.last_user}")
    create_test(
        api,
        memory_bot["id"],
        [
            {"message": "fine", "expect": [{"reply_contains": "fine"}]},
            {"message": "boom", "expect": [{"reply_contains": "x"}]},
            {"message": "never sent", "expect": []},
        ],
    )
    run = run_tests(api, memory_bot["id"])
    [result] = run["results"]
    assert result["status"] == "error" and "turn 2: the turn failed" in result["error"] and "rejected the API key" in result["error"]
    assert len(result["turns"]) == 2 and result["turns"][1]["checks"][0]["status"] == "error"
    assert not any(r.last_user == "never sent" for r in fake_llm.requests)


@override_settings(SKEIN_LLM_TIMEOUT_S=1, SKEIN_LLM_RETRIES=0)
def test_a_hung_model_counts_against_the_same_timeout(api, memory_bot, fake_llm):
    fake_llm.responder = lambda r: Reply(text="late", hang=5)
    create_test(api, memory_bot["id"], [{"message": "hello", "expect": [{"reply_contains": "late"}]}])
    run = run_tests(api, memory_bot["id"])
    assert run["status"] == "error" and "timed out" in run["results"][0]["error"]


def test_a_test_may_run_on_a_published_version_and_only_chosen_tests_run(api, make_workflow, provider, fake_llm):
    workflow = make_workflow(chat_graph(provider.pk, system_prompt="Version one."))
    assert api.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 201
    draft = chat_graph(provider.pk, system_prompt="Version two.")
    assert (
        api.patch(f"/api/workflows/{workflow['id']}/", {"graph": draft, "revision": workflow["revision"]}, format="json").status_code == 200
    )
    one = create_test(
        api, workflow["id"], [{"message": "hi", "expect": [{"sent_contains": {"node": "agent", "text": "Version one."}}]}], name="one"
    )
    create_test(api, workflow["id"], [{"message": "hi", "expect": []}], name="other")
    on_v1 = run_tests(api, workflow["id"], version=1, tests=[one["id"]])
    assert on_v1["version"] == 1 and on_v1["status"] == "passed" and [r["name"] for r in on_v1["results"]] == ["one"]
    on_draft = run_tests(api, workflow["id"], version="draft", tests=[one["id"]])
    assert on_draft["version"] == "draft" and on_draft["status"] == "failed"
    assert start_run(api, workflow["id"], expect=400, version=7)["errors"][0]["field"] == "version"
    assert "no test 99999" in start_run(api, workflow["id"], expect=400, tests=[99999])["detail"]
    for bad in ("published", 0, -1, True, 1.5):
        assert api.post(f"/api/workflows/{workflow['id']}/tests/run/", {"version": bad}, format="json").status_code == 400, bad


def test_nothing_to_run_and_run_limits(api, memory_bot, make_workflow, provider):
    assert "no tests" in start_run(api, memory_bot["id"], expect=400)["detail"]
    for i in range(3):
        create_test(api, memory_bot["id"], [{"message": "a", "expect": []}, {"message": "b", "expect": []}], name=f"t{i}")
    with override_settings(SKEIN_TEST_MAX_TESTS_PER_RUN=2):
        assert "at most 2 tests" in start_run(api, memory_bot["id"], expect=400)["detail"]
    with override_settings(SKEIN_TEST_MAX_TURNS_PER_RUN=5):
        assert "at most 5 turns" in start_run(api, memory_bot["id"], expect=400)["detail"]
    invalid = make_workflow(chat_graph(999999))
    create_test(api, invalid["id"], [{"message": "a", "expect": []}])
    refused = start_run(api, invalid["id"], expect=400)
    assert refused["errors"], refused  # the draft's own validation errors


def test_save_as_test_from_a_real_thread(api, memory_bot, chat):
    first = chat(memory_bot["id"], "my order is 42")
    chat(memory_bot["id"], "where is it?", thread=first["thread"])
    response = api.post(f"/api/threads/{first['thread']}/save-as-test/", {}, format="json")
    assert response.status_code == 201, response.content
    test = response.json()
    assert test["name"].startswith(f"From thread #{first['thread']}")
    assert test["turns"] == [
        {"message": "my order is 42", "expect": [], "reference": "echo: my order is 42"},
        {"message": "where is it?", "expect": [], "reference": "echo: where is it?"},
    ]
    named = api.post(f"/api/threads/{first['thread']}/save-as-test/", {"name": "order follow-up"}, format="json").json()
    assert named["name"] == "order follow-up"
    run = run_tests(api, memory_bot["id"])
    assert run["status"] == "passed" and {r["turns"][1]["reference"] for r in run["results"]} == {"echo: where is it?"}
    assert api.post("/api/threads/2147483647/save-as-test/", {}, format="json").status_code == 404


def test_tests_round_trip_through_jsonl_and_csv(api, memory_bot, make_workflow, provider):
    turns = [
        {
            "message": "hello, world",
            "expect": [{"reply_contains": "hello"}, {"sent_contains": {"node": "agent", "text": 'a "quoted" line'}}],
        },
        {"message": "line one\nline two", "expect": [], "reference": "the reply, then"},
    ]
    create_test(api, memory_bot["id"], turns, name="first")
    create_test(api, memory_bot["id"], [{"message": "x", "expect": [{"judge": {"rubric": "kind", "model": "m"}}]}], name="second")
    target = make_workflow(chat_graph(provider.pk), name="copy")
    for fmt in ("jsonl", "csv"):
        exported = api.get(f"/api/workflows/{memory_bot['id']}/tests/export/?format={fmt}")
        assert exported.status_code == 200 and f"tests.{fmt}" in exported["Content-Disposition"]
        content = exported.content.decode()
        imported = api.post(f"/api/workflows/{target['id']}/tests/import/", {"format": fmt, "content": content}, format="json")
        assert imported.status_code == 201, imported.content
        assert [(t["name"], t["turns"]) for t in imported.json()] == [
            ("first", turns),
            ("second", [{"message": "x", "expect": [{"judge": {"rubric": "kind", "model": "m"}}]}]),
        ]
    assert len(api.get(f"/api/workflows/{target['id']}/tests/").json()) == 4


def test_a_bad_file_imports_nothing_and_says_where(api, memory_bot):
    content = '{"name": "ok", "turns": [{"message": "hi", "expect": []}]}\n{"name": "bad", "turns": [{"message": "hi", "expect": [{"nope": 1}]}]}\n'
    response = api.post(f"/api/workflows/{memory_bot['id']}/tests/import/", {"format": "jsonl", "content": content}, format="json")
    assert response.status_code == 400
    [problem] = response.json()["errors"]
    assert (problem["line"], problem["turn"], problem["check"]) == (2, 0, 0) and "unknown check kind" in problem["message"]
    not_json = api.post(f"/api/workflows/{memory_bot['id']}/tests/import/", {"format": "jsonl", "content": "{oops"}, format="json")
    assert not_json.status_code == 400 and not_json.json()["errors"][0]["line"] == 1
    bad_csv = api.post(f"/api/workflows/{memory_bot['id']}/tests/import/", {"format": "csv", "content": "a,b\n1,2\n"}, format="json")
    assert bad_csv.status_code == 400 and "columns" in bad_csv.json()["errors"][0]["message"]
    assert api.get(f"/api/workflows/{memory_bot['id']}/tests/").json() == []


def test_test_runs_of_a_workflow_are_listed(api, memory_bot):
    create_test(api, memory_bot["id"], [{"message": "hi", "expect": []}])
    first = run_tests(api, memory_bot["id"])
    listed = api.get(f"/api/workflows/{memory_bot['id']}/test-runs/").json()
    assert listed["count"] == 1 and listed["results"][0]["id"] == first["id"] and "results" not in listed["results"][0]


def test_a_test_run_whose_tasks_were_lost_is_taken_up(api, memory_bot, monkeypatch, fake_llm):
    """The broker was down when the run was enqueued (or its worker died): recovery finishes it."""
    from conversation_tests import execution, services
    from conversation_tests.models import TestResult, TestRun

    create_test(api, memory_bot["id"], [{"message": "hi", "expect": [{"reply_contains": "hi"}]}], name="one")
    create_test(api, memory_bot["id"], [{"message": "ho", "expect": [{"reply_contains": "ho"}]}], name="two")
    lost = []
    monkeypatch.setattr(services, "dispatch", lambda task, *args: lost.append((task.name, args)))
    test_run = start_run(api, memory_bot["id"])["test_run"]
    assert [name.rsplit(".", 1)[1] for name, _ in lost] == ["test_run_start"]
    monkeypatch.undo()
    assert execution.conversation_test_runs_recover(older_than_s=60) == []  # too recent to be called lost
    old = TestRun.objects.get(pk=test_run).created - timedelta(minutes=5)
    TestRun.objects.filter(pk=test_run).update(created=old)
    assert execution.conversation_test_runs_recover(older_than_s=60) == [test_run]
    run = wait_run(api, test_run)
    assert run["status"] == "passed" and run["passed"] == 2
    # a test whose worker died mid-way (left running, no progress) is run again from a fresh thread
    TestRun.objects.filter(pk=test_run).update(status="running", finished=None)
    first = TestResult.objects.get(test_run_id=test_run, name="one")
    TestResult.objects.filter(pk=first.pk).update(status="running", finished=None, updated=old)
    assert execution.conversation_test_runs_recover(older_than_s=60) == [test_run]
    rerun = wait_run(api, test_run)
    again = next(r for r in rerun["results"] if r["name"] == "one")
    assert rerun["status"] == "passed" and again["thread"] != first.thread_id and TestResult.objects.get(pk=first.pk).attempts == 2
