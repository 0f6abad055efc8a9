"""The demo workflows' conversation tests (demo/seed.py): what each demo shows, as checks the
bundled local model passes (SmolLM2-135M answers weakly, so they check what the model was sent and
what memory kept, which do not depend on how well it answers)."""

from __future__ import annotations

from conversation_tests.models import ConversationTest
from conversation_tests.services import conversation_test_create
from memory.strategies import SUMMARY_PREFIX


def _sent(node: str, text: str) -> dict:
    return {"sent_contains": {"node": node, "text": text}}


def _not_sent(node: str, text: str) -> dict:
    return {"sent_excludes": {"node": node, "text": text}}


def _turn(message: str, *expect: dict) -> dict:
    return {"message": message, "expect": list(expect)}


NAME = "My name is Ada."
FACTS = [NAME, "I like green tea.", "I live in Lisbon.", "I have a cat called Pixel."]

DEMO_TESTS: dict[str, list[tuple[str, list[dict]]]] = {
    "Demo: chatbot": [
        (
            "answers with the system prompt and the question",
            [
                _turn(
                    "What is the capital of France?",
                    _sent("assistant", "You are a helpful assistant."),
                    _sent("assistant", "What is the capital of France?"),
                    {"reply_matches": r"\w"},
                    {"sent_tokens_at_most": {"node": "assistant", "tokens": 200}},
                ),
            ],
        ),
        ("keeps no memory between turns", [_turn(NAME), _turn("What is my name?", _not_sent("assistant", NAME))]),
    ],
    "Demo: chatbot with full memory (buffer)": [
        (
            "sends the earlier turns back",
            [
                _turn(NAME),
                _turn("What is my name?", _sent("assistant", NAME), _sent("assistant", "What is my name?")),
            ],
        ),
    ],
    "Demo: chatbot with recent memory (window)": [
        ("remembers the last few messages", [_turn(NAME), _turn("What is my name?", _sent("assistant", NAME))]),
        (
            "forgets what scrolled out of the window",
            [
                *[_turn(fact) for fact in FACTS],
                _turn("What is my name?", _not_sent("assistant", NAME), _sent("assistant", FACTS[1]), _sent("assistant", FACTS[3])),
            ],
        ),
    ],
    "Demo: summarizing chatbot (summary)": [
        (
            "folds older messages into a summary",
            [
                *[_turn(fact) for fact in FACTS],
                # The two oldest turns are summarized; the two newest are still sent word for word. (What the
                # summary says is up to the summarizer: a summary_contains check needs a capable one.)
                _turn(
                    "What is my name?",
                    _sent("assistant", SUMMARY_PREFIX.strip()),
                    _sent("assistant", FACTS[2]),
                    _sent("assistant", FACTS[3]),
                ),
            ],
        ),
    ],
    "Demo: billing router": [
        (
            "billing questions go to the billing assistant",
            [
                _turn("Why was I charged twice on my invoice?", _sent("billing", "billing assistant"), _sent("billing", "charged twice")),
            ],
        ),
        (
            "other questions go to the general assistant",
            [
                _turn("What is a good name for a cat?", _sent("general", "friendly general assistant")),
            ],
        ),
    ],
    "Demo: webhook": [
        (
            "answers a webhook message",
            [_turn("Has order 42 shipped?", _sent("assistant", "arrive by webhook"), _sent("assistant", "order 42"))],
        ),
    ],
    "Demo: order lookup": [
        ("answers from its order table", [_turn("1042", {"reply_contains": "Order 1042: shipped"})]),
        ("says when no order matches", [_turn("order 999", {"reply_contains": "No order matches"})]),
    ],
    "Demo: order desk": [
        (
            "is sent the question and told to look the order up",
            [_turn("Where is my order 1042?", _sent("assistant", "lookup_order"), _sent("assistant", "Where is my order 1042?"))],
        ),
    ],
}


def demo_tests_seed(*, workflow) -> list[ConversationTest]:
    """The demo's tests (by its name), for a demo workflow just created."""
    return [conversation_test_create(workflow=workflow, name=name, turns=turns) for name, turns in DEMO_TESTS.get(workflow.name, [])]
