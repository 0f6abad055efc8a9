"""Conversation tests, continued (issue 17): the judge (pass, fail, error), several tests at once,
progress over the socket, comparing two versions, the publish gate and the ``skein_test`` CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from io import StringIO
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.core.management import CommandError, call_command
from django.db.models import F
from django.test import override_settings

from tests.conversation_helpers import checks_of, create_test, run_tests, start_run
from tests.fakellm import Reply, echo
from tests.graphs import chat_graph
from tests.realtime_fixtures import communicator, is_type, receive_until, session_cookie
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parent.parent


def judged(answer: str | Reply):
    """The fake server: the judge model answers ``answer``, every other model echoes."""

    def respond(request):
        if request.model == "judge-model":
            return answer if isinstance(answer, Reply) else Reply(text=answer)
        return echo(request)

    return respond


def judge_check(provider_id: int, rubric: str = "The reply repeats the user's words.") -> dict:
    return {"judge": {"rubric": rubric, "model": "judge-model", "provider": provider_id}}


# --- the judge ------------------------------------------------------------------------------------
def test_the_judge_passes_a_reply_and_its_tokens_count(api, chatbot, provider, fake_llm):
    fake_llm.responder = judged('{"verdict": "pass", "reason": "It repeats the words."}')
    create_test(
        api,
        chatbot["id"],
        [
            {"message": "first", "expect": []},
            {"message": "second", "expect": [judge_check(provider.pk)]},
        ],
    )
    run = run_tests(api, chatbot["id"])
    [check] = checks_of(run)
    assert check["passed"] is True and check["reason"] == "It repeats the words." and "judge (judge-model)" in check["detail"]
    [request] = fake_llm.requests_for("judge-model")
    assert request.body["temperature"] == 0 and "response_format" not in request.body  # litellm knows no schema support here
    grading = request.messages[1]["content"]
    assert "The reply repeats the user's words." in grading and "User: first\nAssistant: echo: first" in grading
    assert grading.endswith("Reply to grade:\necho: second")
    assert run["prompt_tokens"] == 3 * 11  # two turns and the judge


def test_the_judge_fails_a_reply_with_its_reason(api, chatbot, provider, fake_llm):
    fake_llm.responder = judged('```json\n{"verdict": "FAIL", "reason": "It does not apologise."}\n```')
    create_test(api, chatbot["id"], [{"message": "sorry?", "expect": [judge_check(provider.pk, "The reply apologises.")]}])
    run = run_tests(api, chatbot["id"])
    [check] = checks_of(run)
    assert check["passed"] is False and check["status"] == "failed" and "It does not apologise." in check["detail"]
    assert run["status"] == "failed"


@pytest.mark.parametrize(
    "answer, why",
    [
        ("Looks good to me!", "not the JSON verdict"),
        ('{"verdict": "maybe", "reason": "unsure"}', "neither pass nor fail"),
        ('{"verdict": "pass"}', "is not"),
        ('{"verdict": "pass", "reason": "ok", "score": 9}', "is not"),
        ("", "no answer"),
        (Reply(status=401, text="no key"), "the judge failed"),
    ],
)
def test_the_judges_own_failure_is_an_error_not_a_verdict(api, chatbot, provider, fake_llm, answer, why):
    fake_llm.responder = judged(answer)
    create_test(api, chatbot["id"], [{"message": "hi", "expect": [judge_check(provider.pk), {"reply_contains": "hi"}]}])
    run = run_tests(api, chatbot["id"])
    judge, contains = checks_of(run)
    assert judge["status"] == "error" and judge["passed"] is None and why in judge["detail"], judge
    assert contains["passed"] is True
    assert run["status"] == "error" and run["errors"] == 1 and run["failed"] == 0


@override_settings(SKEIN_LLM_TIMEOUT_S=1, SKEIN_LLM_RETRIES=0)
def test_a_judge_that_hangs_is_an_error_within_the_model_timeout(api, chatbot, provider, fake_llm):
    fake_llm.responder = judged(Reply(text='{"verdict": "pass", "reason": "late"}', hang=5))
    create_test(api, chatbot["id"], [{"message": "hi", "expect": [judge_check(provider.pk)]}])
    [check] = checks_of(run_tests(api, chatbot["id"]))
    assert check["status"] == "error" and "timed out" in check["detail"]


def test_the_judge_asks_for_structured_output_where_the_model_supports_it(api, chatbot, fake_llm):
    openai_like = api.post(
        "/api/providers/", {"name": "openai", "kind": "openai", "api_base": fake_llm.base_url, "api_key": "k"}, format="json"
    ).json()
    fake_llm.responder = lambda r: Reply(text='{"verdict": "pass", "reason": "fine"}') if r.model == "gpt-4o-mini" else echo(r)
    create_test(
        api,
        chatbot["id"],
        [{"message": "hi", "expect": [{"judge": {"rubric": "any", "model": "gpt-4o-mini", "provider": openai_like["id"]}}]}],
    )
    [check] = checks_of(run_tests(api, chatbot["id"]))
    assert check["passed"] is True
    [request] = fake_llm.requests_for("gpt-4o-mini")
    assert request.body["response_format"]["type"] == "json_schema"
    assert request.body["response_format"]["json_schema"]["schema"]["required"] == ["verdict", "reason"]


# --- running --------------------------------------------------------------------------------------
@pytest.mark.postgres
def test_several_tests_run_at_once_and_each_tests_turns_in_order(require_postgres, api, make_workflow, provider, fake_llm):
    workflow = make_workflow(chat_graph(provider.pk, memory={"type": "memory.buffer"}))
    in_flight, peak, lock, together = [0], [0], threading.Lock(), threading.Event()

    def respond(request):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
            if in_flight[0] >= 3:
                together.set()
        if request.last_user.startswith("hello"):
            together.wait(timeout=20)  # hold the first turns until all three tests are at theirs
        with lock:
            in_flight[0] -= 1
        return echo(request)

    fake_llm.responder = respond
    for name in ("a", "b", "c"):
        create_test(
            api,
            workflow["id"],
            [
                {"message": f"hello {name}", "expect": []},
                {"message": "next", "expect": [{"sent_contains": {"node": "agent", "text": f"echo: hello {name}"}}]},
            ],
            name=name,
        )
    run = run_tests(api, workflow["id"])
    assert run["status"] == "passed" and peak[0] == 3


@pytest.mark.postgres
def test_progress_reaches_the_browser_as_each_turn_finishes(require_postgres, api, chatbot, user, other_user, fake_llm):
    release = threading.Event()
    fake_llm.responder = lambda r: (release.wait(timeout=30), echo(r))[1]
    create_test(
        api, chatbot["id"], [{"message": "one", "expect": [{"reply_contains": "one"}]}, {"message": "two", "expect": []}], name="progress"
    )
    alice, mallory = session_cookie(user), session_cookie(other_user)

    async def watch():
        # Started from the serving event loop, as daphne serves a request.
        test_run = (await database_sync_to_async(start_run)(api, chatbot["id"]))["test_run"]
        for cookie, code in ((None, 4401), (mallory, 4404)):
            comm = communicator(f"/ws/test-runs/{test_run}/", origin="http://testserver", cookie=cookie)
            assert await comm.connect(timeout=30) == (False, code)
        comm = communicator(f"/ws/test-runs/{test_run}/", origin="http://testserver", cookie=alice)
        assert (await comm.connect(timeout=30))[0] is True
        release.set()
        events = await receive_until(comm, is_type("test_run.finished"), timeout=60)
        await comm.disconnect()
        return test_run, events

    test_run, events = async_to_sync(watch)()
    events = [e for e in events if e["type"] != "test.started"]
    assert [(e["type"], e["data"].get("turn")) for e in events] == [
        ("test.turn", 0),
        ("test.turn", 1),
        ("test.finished", None),
        ("test_run.finished", None),
    ]
    assert events[0]["data"]["reply"] == "echo: one" and events[0]["data"]["status"] == "passed" and events[0]["data"]["turns"] == 2
    assert events[-1]["data"] == {"test_run": test_run, "status": "passed", "passed": 1, "failed": 0, "errors": 0}


# --- comparing ------------------------------------------------------------------------------------
def test_two_versions_side_by_side(api, make_workflow, provider, fake_llm):
    fake_llm.responder = lambda r: Reply(text=f"{r.messages[0]['content']} {r.last_user}")
    workflow = make_workflow(chat_graph(provider.pk, system_prompt="Version one."))
    assert api.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 201
    api.patch(
        f"/api/workflows/{workflow['id']}/",
        {"graph": chat_graph(provider.pk, system_prompt="Version two."), "revision": workflow["revision"]},
        format="json",
    )
    create_test(
        api,
        workflow["id"],
        [{"message": "hi", "expect": [{"sent_contains": {"node": "agent", "text": "Version one."}}]}],
        name="keeps the prompt",
    )
    create_test(
        api, workflow["id"], [{"message": "hi", "expect": [{"reply_contains": "hi"}]}, {"message": "bye", "expect": []}], name="answers"
    )
    published = run_tests(api, workflow["id"], version=1)
    draft = run_tests(api, workflow["id"])
    response = api.get(f"/api/test-runs/{published['id']}/compare/{draft['id']}/")
    assert response.status_code == 200
    compared = response.json()
    assert (compared["a"]["version"], compared["b"]["version"]) == (1, "draft")
    assert compared["verdicts_changed"] == 1 and compared["replies_changed"] == 3
    tests = {t["name"]: t for t in compared["tests"]}
    prompt = tests["keeps the prompt"]
    assert prompt["verdict_changed"] and (prompt["a"]["status"], prompt["b"]["status"]) == ("passed", "failed")
    assert prompt["turns"][0]["b"]["failed_checks"][0]["kind"] == "sent_contains"
    answers = tests["answers"]
    assert not answers["verdict_changed"] and answers["replies_changed"] == 2
    assert [(t["a"]["reply"], t["b"]["reply"]) for t in answers["turns"]] == [
        ("Version one. hi", "Version two. hi"),
        ("Version one. bye", "Version two. bye"),
    ]
    assert api.get(f"/api/test-runs/{published['id']}/compare/2147483647/").status_code == 404


# --- the publish gate -----------------------------------------------------------------------------
def test_publishing_waits_for_the_tests_and_refuses_when_one_fails(api, make_workflow, provider, fake_llm):
    workflow = make_workflow(chat_graph(provider.pk, system_prompt="Be kind."))
    settings_url = f"/api/workflows/{workflow['id']}/tests/settings/"
    assert api.get(settings_url).json() == {"publish_requires_passing": False}
    assert api.patch(settings_url, {"publish_requires_passing": True}, format="json").json() == {"publish_requires_passing": True}
    create_test(api, workflow["id"], [{"message": "hi", "expect": [{"reply_contains": "hi"}]}], name="answers")
    failing = create_test(
        api, workflow["id"], [{"message": "hi", "expect": [{"sent_contains": {"node": "agent", "text": "Be rude."}}]}], name="is rude"
    )

    refused = api.post(f"/api/workflows/{workflow['id']}/publish/")
    assert refused.status_code == 400, refused.content
    body = refused.json()
    assert body["detail"] == "not published: 1 of 2 tests failed" and body["test_run"]
    [failure] = body["failures"]
    assert failure["name"] == "is rude" and failure["status"] == "failed" and (failure["turn"], failure["check"]) == (0, 0)
    assert "was not sent 'Be rude.'" in failure["detail"]
    assert body["errors"][0]["message"].startswith("test 'is rude' failed: turn 1, check 1 (sent_contains)")
    assert api.get(f"/api/workflows/{workflow['id']}/").json()["published_version"] is None
    assert api.get(f"/api/test-runs/{body['test_run']}/").json()["version"] == "draft"

    api.put(
        f"/api/tests/{failing['id']}/",
        {"turns": [{"message": "hi", "expect": [{"sent_contains": {"node": "agent", "text": "Be kind."}}]}]},
        format="json",
    )
    published = api.post(f"/api/workflows/{workflow['id']}/publish/")
    assert published.status_code == 201 and published.json() == {"version": 1}

    api.patch(settings_url, {"publish_requires_passing": False}, format="json")
    api.put(f"/api/tests/{failing['id']}/", {"turns": [{"message": "hi", "expect": [{"reply_contains": "nope"}]}]}, format="json")
    runs = api.get(f"/api/workflows/{workflow['id']}/test-runs/").json()["count"]
    assert api.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 201  # the gate is off: no tests run
    assert api.get(f"/api/workflows/{workflow['id']}/test-runs/").json()["count"] == runs


def test_the_gate_refuses_a_draft_that_changed_while_its_tests_ran(api, chatbot, fake_llm):
    api.patch(f"/api/workflows/{chatbot['id']}/tests/settings/", {"publish_requires_passing": True}, format="json")
    create_test(api, chatbot["id"], [{"message": "hi", "expect": []}])

    def respond(request):
        Workflow.objects.filter(pk=chatbot["id"]).update(revision=F("revision") + 1)  # someone saves meanwhile
        return echo(request)

    fake_llm.responder = respond
    response = api.post(f"/api/workflows/{chatbot['id']}/publish/")
    assert response.status_code == 409 and "changed meanwhile" in response.json()["detail"]
    assert Workflow.objects.get(pk=chatbot["id"]).published_version is None


def test_the_gate_with_no_tests_publishes(api, chatbot):
    api.patch(f"/api/workflows/{chatbot['id']}/tests/settings/", {"publish_requires_passing": True}, format="json")
    assert api.post(f"/api/workflows/{chatbot['id']}/publish/").status_code == 201


# --- the shell ------------------------------------------------------------------------------------
def skein_test(*args) -> tuple[str, int]:
    out = StringIO()
    try:
        call_command("skein_test", *[str(a) for a in args], stdout=out, stderr=out)
    except SystemExit as exc:
        return out.getvalue(), exc.code
    return out.getvalue(), 0


def test_skein_test_reports_each_test_writes_junit_and_exits_non_zero_on_failure(api, chatbot, fake_llm, tmp_path):
    create_test(api, chatbot["id"], [{"message": "hi", "expect": [{"reply_contains": "hi"}]}], name="greets")
    output, code = skein_test(chatbot["id"])
    assert code == 0 and "PASS  greets (1 turn" in output and "1 tests: 1 passed, 0 failed, 0 errors" in output

    create_test(api, chatbot["id"], [{"message": "hi", "expect": [{"reply_contains": "bonjour"}]}], name="speaks french")
    junit = tmp_path / "results.xml"
    output, code = skein_test(chatbot["id"], "--version", "draft", "--junit", junit)
    assert code == 1
    assert "PASS  greets" in output and "FAIL  speaks french (1 turn" in output and "expected the reply to contain 'bonjour'" in output
    assert "2 tests: 1 passed, 1 failed, 0 errors" in output
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "1", "0")
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    assert cases["greets"].find("failure") is None
    failure = cases["speaks french"].find("failure")
    assert (
        "turn 1, check 1 (reply_contains)" in failure.get("message")
        and "user: hi\nassistant: echo: hi" in cases["speaks french"].find("system-out").text
    )


def test_skein_test_refuses_what_it_cannot_run(api, chatbot):
    def refused(*args):
        with pytest.raises(CommandError) as raised:
            call_command("skein_test", *[str(a) for a in args], stdout=StringIO())
        assert raised.value.returncode == 2
        return str(raised.value)

    assert "no workflow" in refused(2147483647)
    assert "no tests" in refused(chatbot["id"])
    create_test(api, chatbot["id"], [{"message": "hi", "expect": []}])
    assert "no published version 3" in refused(chatbot["id"], "--version", "3")
    assert "--version takes" in refused(chatbot["id"], "--version", "latest")


@pytest.mark.postgres
def test_skein_test_as_a_real_process(require_postgres, api, chatbot, fake_llm):
    """The command CI runs: its own process on the same database, exit status 1 on a failure."""
    from django.db import connection

    create_test(api, chatbot["id"], [{"message": "hi", "expect": [{"reply_contains": "hi"}]}], name="greets")
    create_test(api, chatbot["id"], [{"message": "hi", "expect": [{"reply_not_contains": "hi"}]}], name="stays quiet")
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "REDIS_URL": "",
        "DATABASE_URL": f"postgres://{db.get('USER') or 'postgres'}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}",
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "skein_test", str(chatbot["id"])], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "PASS  greets" in done.stdout and "FAIL  stays quiet" in done.stdout and "1 passed, 1 failed" in done.stdout
