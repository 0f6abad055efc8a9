"""Widget visitors as participants, through the widget's socket: anonymous per browser by
default, or the embedding site's signed id; unsigned and forged ids are refused; a visitor never
gets another participant's facts, threads or memory, whatever ids they guess."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async

from memory import facts as fact_rules
from memory.models import Fact
from participants.models import Participant
from participants.services import identity_sign
from runs.models import Run, Thread
from tests.realtime_fixtures import communicator, is_type, receive_until
from tests.test_participants import agent_requests, extracting_responder, facts_graph

realtime = pytest.mark.django_db(transaction=True)


@pytest.fixture
def facts_bot(api, make_workflow, provider):
    """A published chatbot with a participant-keyed buffer and memory.facts: ``{workflow, key, secret}``."""
    workflow = make_workflow(facts_graph(provider.pk, history={"type": "memory.buffer", "key": "participant"}))
    assert api.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 201
    settings = api.get(f"/api/workflows/{workflow['id']}/widget/").json()
    return {"workflow": workflow, "key": settings["public_key"], "secret": settings["identity_secret"]}


async def connect(key):
    comm = communicator(f"/ws/widget/{key}/")
    connected, code = await comm.connect(timeout=30)
    assert connected, code
    assert (await comm.receive_json_from(timeout=30))["type"] == "ready"
    return comm


async def say(comm, text, *, thread=None, **identity):
    await comm.send_json_to({"type": "message", "text": text, "thread": thread, "client_id": None, **identity})
    return await receive_until(comm, is_type("run.finished", "run.failed", "error"))


@pytest.mark.django_db
def test_identity_secret_is_shown_to_the_owner_only_and_rotates(api, other_api, facts_bot):
    url = f"/api/workflows/{facts_bot['workflow']['id']}/widget/"
    assert facts_bot["secret"].startswith("wid_") and len(facts_bot["secret"]) > 30
    assert api.get(url).json()["identity_secret"] == facts_bot["secret"]  # stable
    assert other_api.get(url).status_code == 404
    rotated = api.post(url, {"rotate": "identity_secret"}, format="json")
    assert rotated.status_code == 201 and rotated.json()["identity_secret"] != facts_bot["secret"]
    assert rotated.json()["public_key"] == facts_bot["key"]
    assert api.post(url, {"rotate": "everything"}, format="json").status_code == 400


@realtime
def test_signed_unsigned_and_forged_participants(facts_bot, fake_llm):
    fake_llm.responder = extracting_responder
    secret = facts_bot["secret"]

    async def scenario():
        comm = await connect(facts_bot["key"])
        signed = await say(comm, "my name is Alice", participant="user-1", signature=identity_sign(secret, "user-1"))
        assert signed[-1]["type"] == "run.finished"
        unsigned = await say(comm, "I am user-1", participant="user-1")
        assert unsigned[-1]["type"] == "error" and unsigned[-1]["data"]["code"] == "unsigned_participant"
        assert "data-participant-signature" in unsigned[-1]["data"]["message"]
        forged = await say(comm, "I am user-1", participant="user-1", signature=identity_sign("wid_guess", "user-1"))
        assert forged[-1]["data"]["code"] == "bad_signature"
        other_id = await say(comm, "I am user-1", participant="user-2", signature=identity_sign(secret, "user-1"))
        assert other_id[-1]["data"]["code"] == "bad_signature"
        for bad in (
            {"participant": "x" * 201, "signature": "00"},
            {"participant": "a\tb", "signature": "00"},
            {"visitor": "short"},
            {"visitor": "../../etc/passwd-1234"},
            {"participant": 7, "signature": "00"},
            {"visitor": ["x"]},
        ):
            refused = await say(comm, "hello", **bad)
            assert refused[-1]["type"] == "error" and refused[-1]["data"]["code"] in ("bad_participant", "bad_visitor"), bad
        await comm.disconnect()

    async_to_sync(scenario)()
    assert list(Participant.objects.values_list("external_id", flat=True)) == ["user-1"]
    assert Run.objects.count() == 1 and Run.objects.get().participant.external_id == "user-1"


@realtime
def test_an_anonymous_visitor_is_one_participant_per_browser(facts_bot, fake_llm):
    fake_llm.responder = extracting_responder
    visitor = "v" * 10 + "0123456789abcdef"

    async def scenario():
        comm = await connect(facts_bot["key"])
        await say(comm, "I live in Lisbon", visitor=visitor)
        await comm.disconnect()
        comm = await connect(facts_bot["key"])  # later, a new conversation in the same browser
        second = await say(comm, "where do I live?", visitor=visitor)
        assert second[-1]["type"] == "run.finished"
        await comm.disconnect()

    async_to_sync(scenario)()
    participant = Participant.objects.get()
    assert participant.external_id == "visitor:" + visitor
    assert participant.threads.count() == 2
    sent = agent_requests(fake_llm)[-1].messages
    assert {"role": "system", "content": fact_rules.FACTS_PREFIX + "- city: Lisbon"} in sent
    assert {"role": "user", "content": "I live in Lisbon"} in sent  # the participant-keyed history too


@realtime
def test_a_visitor_never_gets_another_participants_facts(facts_bot, fake_llm):
    fake_llm.responder = extracting_responder
    secret = facts_bot["secret"]
    alice = {"participant": "alice@example.com", "signature": identity_sign(secret, "alice@example.com")}

    async def scenario():
        comm = await connect(facts_bot["key"])
        told = await say(comm, "my name is Alice and I work at Initech", **alice)
        alice_thread = told[0]["data"]["thread"]
        await comm.disconnect()

        comm = await connect(facts_bot["key"])
        mallory = {"visitor": "mallory-browser-0001"}
        # claiming Alice's id without her signature, or with a made-up one
        for claim in ({"participant": "alice@example.com"}, {"participant": "alice@example.com", "signature": "0" * 64}):
            refused = await say(comm, "what is my name?", **claim)
            assert refused[-1]["type"] == "error"
        # guessing participant and fact ids as visitor ids, or her thread's token
        alice_pk = str(await database_sync_to_async(lambda: Participant.objects.get(external_id="alice@example.com").pk)())
        for guess in ({"visitor": "visitor:alice@example.com"}, {"visitor": alice_pk * 16}, {"visitor": "alice-example-com"}):
            answer = await say(comm, "what is my name?", **guess)
            assert answer[-1]["type"] in ("run.finished", "error")
        on_her_thread = await say(comm, "what is my name?", thread=alice_thread, **mallory)
        assert on_her_thread[-1]["type"] == "error" and on_her_thread[-1]["data"]["code"] == "unknown_thread"
        anonymous_on_her_thread = await say(comm, "what is my name?", thread=alice_thread)
        assert anonymous_on_her_thread[-1]["data"]["code"] == "unknown_thread"
        await comm.send_json_to({"type": "sync", "thread": alice_thread, "after": 0, **mallory})
        synced = await receive_until(comm, is_type("history", "error"))
        assert synced[-1]["type"] == "error" and synced[-1]["data"]["code"] == "unknown_thread"
        mine = await say(comm, "what is my name?", **mallory)
        assert mine[-1]["type"] == "run.finished"
        # Alice herself continues her thread
        await comm.send_json_to({"type": "sync", "thread": alice_thread, "after": 0, **alice})
        history = (await receive_until(comm, is_type("history", "error")))[-1]
        assert history["type"] == "history" and history["data"]["messages"][0]["content"].startswith("my name is Alice")
        await comm.disconnect()

    async_to_sync(scenario)()
    alice_runs = set(Run.objects.filter(participant__external_id="alice@example.com").values_list("pk", flat=True))
    assert len(alice_runs) == 1
    # no model call made for anyone else was sent anything of Alice's
    for request in agent_requests(fake_llm)[1:]:
        text = str(request.messages)
        assert "Alice" not in text and "Initech" not in text, text
    assert set(Fact.objects.filter(participant__external_id="alice@example.com").values_list("value", flat=True)) == {"Alice", "Initech"}
    assert not Fact.objects.exclude(participant__external_id="alice@example.com").filter(value__in=["Alice", "Initech"]).exists()
    assert Thread.objects.get(widget_token__isnull=False, participant__external_id="alice@example.com").messages.count() == 2
