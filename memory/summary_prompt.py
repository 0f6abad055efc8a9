"""What the summarizer is asked, and how its answer becomes the stored summary.

A stored summary has two parts, kept apart:

- **what the participant said about themselves**, in their own words: the first-person statements
  of their messages ("My name is Alice.", "I moved from Lisbon to Porto."), taken by Skein itself,
  not by the model, and merged deterministically: a newer statement supersedes an older one on the
  same subject (the newest value wins when a fact changes), exact repeats are kept once, the list
  is in the order they were said (newest last). Nothing the participant said about themselves
  depends on how well a model copies it, and nothing the model invents enters this part;
- **the narrative**: what the conversation was about, written by the summarizer model.

With the default prompt the model is sent the summary so far and only the participant's new
messages, one per line (small models summarize what they are given; shown a transcript they
continue it). Its sentence or two, without echoed scaffolding and without sentences copied from
what it was sent, extend the narrative: earlier parts stay as they were, the newest that fit are
kept. A prompt of the user's own is sent as before (the narrative so far, then the new messages
with their roles) and its answer is the new narrative. The notes are merged by Skein either way,
and what is sent is exactly what ``summary_request`` returns (recorded on the Summarization).
"""

from __future__ import annotations

import re

DEFAULT_SUMMARY_PROMPT = (
    "Write one or two short sentences saying what the user talked about in the messages below. "
    "Use only what the messages say. Write nothing else."
)

# Defaults of earlier releases, saved in the params of workflows drawn then: still the default.
EARLIER_DEFAULTS = (
    "You maintain a running summary of a conversation between a user and an assistant.\n"
    "Extend the existing summary with the new messages below. Keep every fact, name, number, "
    "decision, preference and open question that may matter later; drop greetings and filler. "
    "Write in the third person, in the conversation's language, as compact prose. "
    "Return only the updated summary.",
    "Summarize the conversation in one or two short sentences. Keep names and facts about the user.",
)

# The notes are quoted: a small model then repeats the user's words instead of inventing a persona.
FACTS_HEADING = "Facts from the user (quoted, newest last):"
NARRATIVE_HEADING = "Conversation so far:"
NO_SUMMARY = "(none yet)"
SO_FAR = "Summary so far:"
NEW_FROM_USER = "New messages from the user:"
MAX_REQUEST_LINE_CHARS = 600  # pasted text is cut in the request: its gist is enough for a narrative
# Bounds: a summary stays small whatever the conversation's length.
MAX_NOTES = 60
MAX_NOTE_CHARS = 240
MAX_NARRATIVE_CHARS = 600  # the newest parts that fit; older ones go first
MAX_PART_CHARS = 320
# The default prompt asks for a sentence or two: a consuming model summarizing ("from_parent") is
# stopped there rather than at its provider's default reply length.
DEFAULT_SUMMARY_MAX_TOKENS = 120
# A message longer than this is pasted text, not a statement about oneself.
MAX_STATEMENT_MESSAGE_WORDS = 120
MAX_STATEMENT_WORDS = 30

FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|me|my|mine|we|we're|we've|our|us)\b", re.IGNORECASE)
# "Tell me a joke." is a request, not a statement about oneself ("Home for me is Lisbon." is one).
OBJECT_ONLY = re.compile(r"\b(me|us)\b", re.IGNORECASE)
REQUEST_VERBS = set("tell give show help let send explain teach find write make bring get suggest recommend remind".split())
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
TOKEN = re.compile(r"[\w']+")
# Lines of the request a model may echo back into its answer.
SCAFFOLDING = re.compile(
    r"^\s*(existing summary|summary so far|updated summary|summary|new messages( to add to it| from the user)?|messages from the user|"
    r"the user said about themselves[^:]*|conversation so far)\s*:\s*",
    re.IGNORECASE,
)


# --- the stored summary ---------------------------------------------------------------------------
def summary_parts(text: str) -> tuple[list[str], list[str]]:
    """(notes, narrative parts) of a stored summary. Text not in Skein's format (written before it,
    or edited by hand) is all narrative."""
    text = (text or "").strip()
    if not text:
        return [], []
    notes: list[str] = []
    narrative = text
    if text.startswith(FACTS_HEADING):
        body, _, narrative = text[len(FACTS_HEADING) :].partition(NARRATIVE_HEADING)
        notes = [_unquote(line.strip()[2:].strip()) for line in body.splitlines() if line.strip().startswith("- ")]
    elif text.startswith(NARRATIVE_HEADING):
        narrative = text[len(NARRATIVE_HEADING) :]
    parts = [p.strip() for p in narrative.strip().split("\n") if p.strip()]
    return notes, parts


def _unquote(note: str) -> str:
    return note[1:-1] if len(note) >= 2 and note[0] == note[-1] == '"' else note


def summary_text(notes: list[str], parts: list[str]) -> str:
    """The stored text: the notes under their heading, then the narrative (a summary with no notes
    is its narrative alone)."""
    if not notes:
        return "\n".join(parts)
    lines = [FACTS_HEADING, *(f'- "{note}"' for note in notes)]
    if parts:
        lines += ["", NARRATIVE_HEADING, *parts]
    return "\n".join(lines)


# --- the participant's own statements -------------------------------------------------------------
def statements(messages: list[dict]) -> list[str]:
    """The participant's statements about themselves in ``messages``: first-person sentences of
    their own messages, not questions, not pasted text."""
    found = []
    for message in messages:
        if message["role"] != "user":
            continue
        content = " ".join(str(message["content"]).split())
        if not content or len(content.split()) > MAX_STATEMENT_MESSAGE_WORDS:
            continue
        for sentence in SENTENCE_END.split(content):
            sentence = sentence.strip()
            if not sentence or sentence.endswith("?") or len(sentence.split()) > MAX_STATEMENT_WORDS:
                continue
            if FIRST_PERSON.search(sentence) and not _request(sentence):
                found.append(sentence[:MAX_NOTE_CHARS])
    return found


def _request(sentence: str) -> bool:
    """An imperative asking for something, whose only first person is "me"/"us"."""
    words = _tokens(sentence)
    pronouns = {m.lower() for m in FIRST_PERSON.findall(sentence)}
    return bool(words) and words[0].lower() in REQUEST_VERBS and pronouns <= {"me", "us"}


def _tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


def _distinctive(note: str) -> set[str]:
    """What names a fact's value in a note: its capitalized words past the first, and its numbers
    ("I live in Lisbon", "My locker code is 4721")."""
    tokens = _tokens(note)
    return {t.lower() for t in tokens[1:] if (t[0].isupper() and not t.startswith("I'") and t != "I") or any(c.isdigit() for c in t)}


def _same_subject(old: str, new: str) -> bool:
    """The same statement with another value: three or more leading words in common, then at most
    two words each ("My favourite colour is teal" / "My favourite colour is amber now")."""
    a, b = [t.lower() for t in _tokens(old)], [t.lower() for t in _tokens(new)]
    common = 0
    while common < min(len(a), len(b)) and a[common] == b[common]:
        common += 1
    return common >= 3 and len(a) - common <= 2 and len(b) - common <= 2


def supersedes(new: str, old: str) -> bool:
    """Whether ``new`` replaces ``old``: the same words, the same subject with another value, or a
    mention of what named the old value ("I moved from Lisbon to Porto" replaces "I live in Lisbon")."""
    if _tokens(new.lower()) == _tokens(old.lower()):
        return True
    if _same_subject(old, new):
        return True
    words = {t.lower() for t in _tokens(new)}
    return bool(_distinctive(old) & words)


def notes_merge(notes: list[str], new: list[str]) -> list[str]:
    """``notes`` extended with ``new`` (in order): each new statement drops the older ones it
    supersedes and joins at the end; at most ``MAX_NOTES``, the oldest going first."""
    merged = list(notes)
    for statement in new:
        merged = [note for note in merged if not supersedes(statement, note)]
        merged.append(statement)
    return merged[-MAX_NOTES:]


# --- the request and the answer -------------------------------------------------------------------
def is_default(prompt: str) -> bool:
    return not prompt.strip() or prompt.strip() in (DEFAULT_SUMMARY_PROMPT, *EARLIER_DEFAULTS)


def summary_request(*, prompt: str, previous_summary: str, messages: list[dict]) -> list[dict]:
    """The messages the summarizer is sent (recorded exactly as sent): the prompt, the summary so
    far, and the new messages (with the default prompt, only the participant's, one per line)."""
    previous = previous_summary.strip() or NO_SUMMARY
    if is_default(prompt):
        lines = [" ".join(str(m["content"]).split()) for m in messages if m["role"] == "user"]
        lines = [line if len(line) <= MAX_REQUEST_LINE_CHARS else line[:MAX_REQUEST_LINE_CHARS] + " …" for line in lines]
        new = "\n".join(f"- {line}" for line in lines) or "- (nothing)"
        return [
            {"role": "system", "content": DEFAULT_SUMMARY_PROMPT},
            {"role": "user", "content": f"{SO_FAR}\n{previous}\n\n{NEW_FROM_USER}\n{new}"},
        ]
    # The user's prompt rewrites the narrative: it is sent the narrative, not the notes kept apart.
    previous = "\n".join(summary_parts(previous_summary)[1]) or NO_SUMMARY
    transcript = "\n".join(f"{m['role']}: {m['content']}" for m in messages)
    return [
        {"role": "system", "content": prompt},
        {"role": "user", "content": f"{SO_FAR}\n{previous}\n\nNew messages:\n{transcript}\n\nUpdated summary:"},
    ]


def _copied(sentence: str, sources: list[set[str]]) -> bool:
    """A sentence made of one request line's words (a small model copying its input adds nothing)."""
    words = {t.lower() for t in _tokens(sentence)}
    return len(words) >= 3 and any(len(words & source) >= 0.8 * len(words) for source in sources)


def _narrative(sentence: str) -> bool:
    """A sentence of a narrative: about the user, not a question, not the model speaking as itself."""
    sentence = sentence.strip()
    return bool(sentence) and not sentence.endswith("?") and not FIRST_PERSON.search(sentence)


def _clean(reply: str, request: list[dict]) -> str:
    """The model's answer without echoed scaffolding, without sentences copied from the request and
    without sentences that are no narrative (questions, the model speaking as itself), on one line."""
    headings = {SO_FAR, NEW_FROM_USER, NO_SUMMARY, FACTS_HEADING, NARRATIVE_HEADING}
    sources = [
        {t.lower() for t in _tokens(line)}
        for m in request
        for line in m["content"].splitlines()
        if line.strip() and line.strip() not in headings
    ]
    kept = []
    for line in (reply or "").splitlines():
        line = SCAFFOLDING.sub("", line).strip().lstrip("-* ").strip()
        if not line or line == NO_SUMMARY:
            continue
        kept.extend(s for s in SENTENCE_END.split(line) if _narrative(s) and not _copied(s, sources))
    return " ".join(" ".join(kept).split())


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind("! "))
    return cut[: end + 1] if end > limit // 3 else cut.rstrip() + " …"


def _newest_within(parts: list[str], limit: int) -> list[str]:
    kept, size = [], 0
    for part in reversed(parts):
        size += len(part) + 1
        if kept and size > limit:
            break
        kept.append(part)
    return kept[::-1]


def summary_from_reply(
    *,
    previous_summary: str,
    reply: str,
    messages: list[dict] | None = None,
    prompt: str = DEFAULT_SUMMARY_PROMPT,
    request: list[dict] | None = None,
) -> str:
    """The summary to store: the previous one's notes merged with the participant's statements in
    ``messages``, and its narrative extended by the model's answer ("" if there is nothing at all)."""
    notes, parts = summary_parts(previous_summary)
    notes = notes_merge(notes, statements(messages or []))
    if is_default(prompt):
        answer = _clip(_clean(reply, request or []), MAX_PART_CHARS)
        parts = _newest_within(parts + [answer] if answer and answer not in parts else parts, MAX_NARRATIVE_CHARS)
    else:  # the user's prompt asks for the whole new narrative, in its own shape
        answer = "\n".join(SCAFFOLDING.sub("", line).rstrip() for line in (reply or "").strip().splitlines()).strip()
        parts = [answer] if answer else parts
    return summary_text(notes, parts)
