"""Model calls keep their connection to the provider, and stop reading at the end of an answer.

The OpenAI SDK's synchronous stream leaves an HTTP/1.1 answer's last bytes unread, which would
close the connection after every call (a new TCP and TLS handshake per model call); Skein's
transport reads them when the stream ended (core/netguard.py). The answer's text, usage and
cost are taken from the stream, so litellm's end-of-stream rebuild is skipped (providers/llm.py)."""

from __future__ import annotations

import time

import pytest

from engine.interfaces import ModelRef
from engine.registry import NodeError
from providers import llm
from tests.fakellm import Reply

pytestmark = pytest.mark.django_db

HELLO = [{"role": "user", "content": "hello"}]


def test_consecutive_model_calls_reuse_one_connection(provider, fake_llm):
    fake_llm.responder = lambda request: Reply(text="a complete answer", prompt_tokens=7, completion_tokens=3)
    opened_before = fake_llm.connections_opened
    results = [llm.complete(ModelRef(model="m"), provider, HELLO)]
    # The first call opens a connection, or reuses one an earlier test left in the pool.
    assert fake_llm.connections_opened - opened_before <= 1
    opened_first = fake_llm.connections_opened
    results += [llm.complete(ModelRef(model="m"), provider, HELLO) for _ in range(19)]
    assert {r.text for r in results} == {"a complete answer"}
    assert {(r.prompt_tokens, r.completion_tokens, r.finish_reason) for r in results} == {(7, 3, "stop")}
    assert fake_llm.connections_opened == opened_first  # the other 19 reuse it


def test_an_answer_cut_short_by_its_reader_is_closed_not_drained(provider, fake_llm):
    """The reader fails after the first token while the server would go on for 30 s: the call
    ends at once (its connection is closed rather than read to the end)."""
    fake_llm.responder = lambda request: Reply(text="one two three four", token_delay=10.0)

    def refuse(token):
        raise RuntimeError("the participant left")

    started = time.monotonic()
    with pytest.raises(NodeError):
        llm.complete(ModelRef(model="m"), provider, HELLO, on_token=refuse)
    assert time.monotonic() - started < 5.0
    # The next call is answered on a connection of its own.
    fake_llm.responder = lambda request: Reply(text="fine")
    assert llm.complete(ModelRef(model="m"), provider, HELLO).text == "fine"


def test_an_answer_without_usage_is_read_to_its_end_and_counted(provider, fake_llm):
    """A server that ignores ``stream_options`` sends no usage: the stream is read to its end and
    the tokens are counted with the model's tokenizer."""
    fake_llm.responder = lambda request: Reply(text="counted here", usage=False)
    result = llm.complete(ModelRef(model="m"), provider, HELLO)
    assert result.text == "counted here"
    assert result.prompt_tokens > 0 and result.completion_tokens > 0
