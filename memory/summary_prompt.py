"""What the summarizer is asked, and how its answer becomes the stored summary.

The request carries the previous summary and the messages to fold in; the summarizer extends the
summary rather than rewriting it. ``summary_from_reply`` turns the model's answer into the text
that is stored (and later shown to the consuming model).
"""

from __future__ import annotations

DEFAULT_SUMMARY_PROMPT = (
    "You maintain a running summary of a conversation between a user and an assistant.\n"
    "Extend the existing summary with the new messages below. Keep every fact, name, number, "
    "decision, preference and open question that may matter later; drop greetings and filler. "
    "Write in the third person, in the conversation's language, as compact prose. "
    "Return only the updated summary."
)


def summary_request(*, prompt: str, previous_summary: str, messages: list[dict]) -> list[dict]:
    transcript = "\n".join(f"{m['role']}: {m['content']}" for m in messages)
    previous = previous_summary.strip() or "(none yet)"
    return [
        {"role": "system", "content": prompt},
        {
            "role": "user",
            "content": f"Existing summary:\n{previous}\n\nNew messages to add to it:\n{transcript}\n\nUpdated summary:",
        },
    ]


def summary_from_reply(*, previous_summary: str, reply: str) -> str:
    """The summary to store from the summarizer's answer ("" if it gave none)."""
    return reply.strip()
