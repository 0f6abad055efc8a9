"""``memory.facts``: what is sent, what the extraction is asked, and how its answer is read
(docs/participants.md#memoryfacts). Pure Python: the runtime (``memory.runtime``) performs the request and the writes
(``memory.facts_services``).

A fact is a ``name`` ("city") and a ``value`` ("Porto"). The consuming model gets the current facts
as one system message placed before the history. After each turn the extracting model is sent the
owner's extraction prompt, the current facts and the turn's exchange, and answers with the facts
that are new or changed; a changed value supersedes the old one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

FACTS_PREFIX = "Known facts about the participant (use them when relevant):\n"
MAX_NAME_CHARS = 100
MAX_VALUE_CHARS = 1000
# At most this many facts in one answer are read (the rest is ignored).
MAX_FACTS_PER_ANSWER = 50
MAX_FACTS = 500  # what ``max_facts`` may be, and what the owner may keep per participant and workflow

DEFAULT_EXTRACT_PROMPT = """You keep a short list of durable facts about the participant (the person talking to the assistant).
From the latest exchange, list the facts about the participant that are new, or whose value changed:
their name, where they live, their job, family, preferences, plans, constraints, and anything they ask to be remembered.
Use short lower-case keys (such as "name", "city", "employer", "diet") and reuse the key of a known fact when its value changed
(someone who moved from Lisbon to Porto gets "city": "Porto").
Do not list facts about the assistant, passing small talk, or facts that are already known with the same value."""

ANSWER_FORMAT = (
    'Answer with JSON only, in this shape: {"facts": [{"key": "city", "value": "Porto"}]}. '
    'Answer {"facts": []} when nothing is new or changed.'
)


@dataclass(frozen=True)
class Extracted:
    name: str
    value: str


def fact_name(value: str) -> str:
    """A fact's key as stored: trimmed, lower case, inner whitespace as ``_``, at most 100 characters."""
    return re.sub(r"\s+", "_", value.strip().lower())[:MAX_NAME_CHARS]


def context_message(facts: list[dict]) -> dict | None:
    """The one system message of the current facts (``{name, value}`` each), or None for none."""
    if not facts:
        return None
    lines = "\n".join(f"- {f['name']}: {f['value']}" for f in facts)
    return {"role": "system", "content": FACTS_PREFIX + lines}


def extraction_request(*, prompt: str, facts: list[dict], user_text: str, reply: str) -> list[dict]:
    """Exactly what the extracting model is sent."""
    known = json.dumps({f["name"]: f["value"] for f in facts}, ensure_ascii=False, indent=1) if facts else "{}"
    exchange = f"Participant: {user_text}\n\nAssistant: {reply}"
    return [
        {"role": "system", "content": f"{prompt.strip()}\n\n{ANSWER_FORMAT}"},
        {"role": "user", "content": f"Known facts:\n{known}\n\nThe latest exchange:\n{exchange}"},
    ]


class BadAnswer(ValueError):
    """The extracting model's answer holds no readable list of facts."""


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def _json_in(text: str):
    text = _FENCE.sub("", text.strip())
    try:
        return json.loads(text)
    except ValueError:
        pass
    for opening, closing in (("{", "}"), ("[", "]")):
        start, end = text.find(opening), text.rfind(closing)
        if 0 <= start < end:
            try:
                return json.loads(text[start : end + 1])
            except ValueError:
                continue
    raise BadAnswer("the extraction answer is not JSON")


def parse_answer(text: str) -> list[Extracted]:
    """The facts in the extracting model's answer: ``{"facts": [{key, value}]}``, a bare list of
    them, or a ``{key: value}`` object. Values that are numbers or booleans are read as text;
    entries that are not a key with a text value are left out. ``BadAnswer`` when nothing is JSON."""
    data = _json_in(text)
    if isinstance(data, dict) and isinstance(data.get("facts"), (list, dict)):
        data = data["facts"]
    if isinstance(data, dict):
        data = [{"key": k, "value": v} for k, v in data.items()]
    if not isinstance(data, list):
        raise BadAnswer("the extraction answer holds no list of facts")
    found: dict[str, Extracted] = {}
    for item in data[:MAX_FACTS_PER_ANSWER]:
        if not isinstance(item, dict):
            continue
        key, value = item.get("key", item.get("name")), item.get("value")
        if isinstance(value, bool):
            value = "yes" if value else "no"
        elif isinstance(value, (int, float)):
            value = str(value)
        if not isinstance(key, str) or not isinstance(value, str):
            continue
        name, value = fact_name(key), value.strip()[:MAX_VALUE_CHARS]
        if name and value:
            found[name] = Extracted(name=name, value=value)
    return list(found.values())


def same_value(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()
