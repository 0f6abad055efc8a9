"""The memory-quality benchmark's conversations and scoring, as plain Python (no Django, no model).

``generate(messages, seed)`` writes a multi-session conversation in which the participant states
facts about themselves (name, city, job, pet, allergy, favourite things, a date, numbers), changes
some of them later ("I moved from Lisbon to Porto"), and talks about other things in between
(questions, small talk, long pasted text). The assistant's replies are scripted, so only a
summarizer needs a model. The end state lists every current fact with its value and the facts
whose value changed (with the old value). Each session carries its index, so a replay may put the
whole conversation in one thread or each session in a thread of its own (facts told in thread 1,
asked in thread 3): memory keyed by participant is measured on the second layout.

``score(context, conversation)`` is the model-free measure: for each current fact, is its value
present in what the consuming model would be sent; is an old value presented without the new one
(stale)?
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

# --- the facts ------------------------------------------------------------------------------------
# Each slot: the values it draws from, how the participant states it, how they state a change
# ({old} and {new}), and the question that asks for it. Values are distinct across slots and never
# appear in the filler text, so containment scoring cannot be fooled by a distractor.
SLOTS: dict[str, dict] = {
    "name": {
        "values": ["Alice", "Beatriz", "Chidi", "Dmitri", "Esther", "Farah", "Gustavo", "Hiroko", "Ingrid", "Joaquim"],
        "state": ["My name is {v}.", "Hi! I'm {v}, by the way.", "You can call me {v}, that's my name."],
        "change": ["Actually, please call me {new} from now on, not {old}.", "I changed my name: I'm {new} now, no longer {old}."],
        "question": "What is my name?",
    },
    "city": {
        "values": ["Lisbon", "Porto", "Tallinn", "Montevideo", "Nairobi", "Osaka", "Valparaiso", "Ljubljana", "Halifax", "Tbilisi"],
        "state": ["I live in {v}.", "I'm based in {v}.", "Home for me is {v}."],
        "change": ["I moved from {old} to {new} last month.", "Big news: I left {old}, I live in {new} now."],
        "question": "Where do I live?",
    },
    "job": {
        "values": ["nurse", "carpenter", "pharmacist", "geologist", "librarian", "welder", "architect", "veterinarian"],
        "state": ["I work as a {v}.", "My job? I'm a {v}.", "I've been a {v} for years."],
        "change": ["I quit being a {old}; I'm a {new} now.", "New job: I'm no longer a {old}, I work as a {new}."],
        "question": "What is my job?",
    },
    "pet": {
        "values": ["Biscuit", "Pixel", "Mango", "Ziggy", "Pepper", "Noodle", "Waffles", "Juniper"],
        "state": ["My dog is called {v}.", "I have a dog named {v}.", "{v} is the name of my dog."],
        "change": ["We renamed the dog: {old} is now called {new}.", "My dog's name is {new} now, we dropped {old}."],
        "question": "What is my dog's name?",
    },
    "allergy": {
        "values": ["peanuts", "shellfish", "penicillin", "sesame", "kiwi", "latex"],
        "state": [
            "I'm allergic to {v}.",
            "Careful with recipes: I have an allergy to {v}.",
            "One thing to know: {v} make me sick, I'm allergic.",
        ],
        "change": [
            "Turns out I'm not allergic to {old} after all; my allergy is to {new}.",
            "The doctor says my allergy is {new}, not {old}.",
        ],
        "question": "What am I allergic to?",
    },
    "colour": {
        "values": ["turquoise", "magenta", "ochre", "crimson", "lavender", "teal", "amber"],
        "state": ["My favourite colour is {v}.", "I love the colour {v}, it's my favourite."],
        "change": ["My favourite colour changed from {old} to {new}.", "These days my favourite colour is {new} rather than {old}."],
        "question": "What is my favourite colour?",
    },
    "food": {
        "values": ["lasagna", "ramen", "falafel", "paella", "pierogi", "moussaka", "ceviche", "goulash"],
        "state": ["My favourite food is {v}.", "Nothing beats {v}, my favourite dish."],
        "change": ["I'm over {old}; my favourite food is {new} now.", "My favourite dish used to be {old}, now it's {new}."],
        "question": "What is my favourite food?",
    },
    "birthday": {
        "values": ["3 February", "14 March", "27 April", "9 June", "21 August", "30 September", "12 November", "5 December"],
        "state": ["My birthday is on {v}.", "I was born on {v}."],
        "change": ["I got my birthday wrong before: it's {new}, not {old}.", "Correction: my birthday is {new}, not {old}."],
        "question": "When is my birthday?",
    },
    "locker": {
        "values": ["4721", "8305", "1968", "6642", "3097", "5518", "7204", "2859"],
        "state": ["My gym locker code is {v}.", "Remember my locker code for me: {v}."],
        "change": ["The gym changed my locker code from {old} to {new}.", "New locker code: {new} (the old {old} no longer works)."],
        "question": "What is my gym locker code?",
    },
    "sister": {
        "values": ["Marisol", "Annika", "Tamsin", "Oksana", "Priya", "Rosalind", "Yusra", "Leontine"],
        "state": ["My sister's name is {v}.", "I have a sister, {v}."],
        "change": ["I meant my sister {new}, not {old}; {new} is her name.", "Sorry, my sister is called {new}, not {old}."],
        "question": "What is my sister's name?",
    },
    "car": {
        "values": ["Volvo", "Subaru", "Skoda", "Peugeot", "Mazda", "Fiat"],
        "state": ["I drive a {v}.", "My car is a {v}."],
        "change": ["I sold the {old} and bought a {new}.", "My car is a {new} now, the {old} is gone."],
        "question": "What car do I drive?",
    },
    "children": {
        "values": ["two kids", "three kids", "four kids", "one kid"],
        "state": ["I have {v}.", "We have {v} at home."],
        "change": ["We had a baby, so now it's {new} instead of {old}.", "Update: {new} now, not {old}."],
        "question": "How many children do I have?",
    },
}

# Slots stated, and how many of them change later, per conversation length.
PLAN = {40: (6, 2), 200: (10, 4), 1000: (12, 6)}
SESSIONS = {40: 2, 200: 4, 1000: 8}

# --- the filler -----------------------------------------------------------------------------------
QUESTIONS = [
    "How does photosynthesis work?",
    "Can you explain what a mortgage is?",
    "What's the difference between weather and climate?",
    "Why is the sky blue?",
    "How do I boil an egg properly?",
    "What is a prime number?",
    "How do vaccines train the immune system?",
    "What does an index fund do?",
    "How can I improve my sleep?",
    "What's a good way to learn a new language?",
    "Why do cats purr?",
    "How does a refrigerator keep things cold?",
    "What is the tallest mountain in the world?",
    "How do airplanes stay in the air?",
    "What is compound interest?",
    "Can you suggest a stretching routine?",
]
SMALL_TALK = [
    "It's raining again today.",
    "I had a long day.",
    "Thanks, that was helpful!",
    "Haha, good one.",
    "I'm making tea right now.",
    "The weekend went by too fast.",
    "I just got back from a walk.",
    "Traffic was terrible this morning.",
    "Okay, makes sense.",
    "I should really get some sleep soon.",
    "The neighbours are having a party.",
    "I finished a good book yesterday.",
]
GREETINGS = ["Hi, I'm back.", "Hello again!", "Good morning!", "Hey, it's me again.", "Evening! Got a minute?"]
PASTE_INTROS = [
    "Here's an article I'm reading, what do you think?",
    "Can you summarize this text for me?",
    "A colleague sent me this, is it right?",
]
WORDS = (
    "the of and to in is that for on with as by this be are from at or an it was which not have has but were their "
    "can more also other been all its about into some would these there than such may most new many after time "
    "system energy process water market study research report growth data model results change local public "
    "policy early river forest mountain ocean climate economy history science language design network signal "
    "harvest village festival council engine harbour bridge railway garden orchard valley season morning winter"
).split()
REPLIES = {
    "fact": ["Thanks for telling me, I'll keep that in mind.", "Got it, noted.", "Good to know!", "Understood, thank you."],
    "question": [
        "Good question. In short, it comes down to a few simple principles; happy to go deeper if you like.",
        "Here's the gist: it works step by step, and the details depend on the situation.",
        "In brief: there are a couple of key ideas, and I can explain each one if you want.",
    ],
    "small": ["I hear you.", "Sounds nice.", "Ha, fair enough.", "Take care of yourself!", "Glad to hear it."],
    "paste": [
        "The text argues its point clearly, though a few claims could use sources.",
        "Summary of the text: it describes a process and its effects, with some examples.",
    ],
    "greeting": ["Welcome back! How can I help?", "Hello! Good to see you again."],
}
CLOSING = "Thanks, that's all for today."


@dataclass(frozen=True)
class Fact:
    slot: str
    value: str
    question: str
    old: str | None = None  # the value it had before it changed (None: never changed)
    stated_session: int = 0
    changed_session: int | None = None


@dataclass
class Conversation:
    seed: int
    messages: list[dict] = field(default_factory=list)  # {role, content, session}; user/assistant alternating
    facts: list[Fact] = field(default_factory=list)  # the current facts at the end

    @property
    def changed(self) -> list[Fact]:
        return [f for f in self.facts if f.old is not None]

    @property
    def sessions(self) -> int:
        return 1 + max((m["session"] for m in self.messages), default=0)

    def turns(self, session: int | None = None) -> list[tuple[str, str]]:
        """(user, assistant) pairs, of one session or all."""
        msgs = [m for m in self.messages if session is None or m["session"] == session]
        return [(msgs[i]["content"], msgs[i + 1]["content"]) for i in range(0, len(msgs) - 1, 2)]

    def as_dict(self) -> dict:
        return {
            "seed": self.seed,
            "messages": len(self.messages),
            "sessions": self.sessions,
            "facts": [f.__dict__ for f in self.facts],
        }


def _paste(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(6, 10)):
        words = [rng.choice(WORDS) for _ in range(rng.randint(10, 20))]
        sentences.append(" ".join(words).capitalize() + ".")
    return f"{rng.choice(PASTE_INTROS)}\n\n" + " ".join(sentences)


def generate(messages: int, seed: int = 16) -> Conversation:
    """A conversation of ``messages`` messages (even; user and assistant alternating)."""
    if messages % 2 or messages < 20:
        raise ValueError("messages must be even and at least 20")
    rng = random.Random(f"{seed}:{messages}")
    n_slots, n_changes = PLAN.get(messages, (min(len(SLOTS), max(4, messages // 20)), max(1, messages // 80)))
    n_sessions = SESSIONS.get(messages, max(1, messages // 100))
    turns = messages // 2
    slots = rng.sample(sorted(SLOTS), n_slots)
    values = {slot: rng.sample(SLOTS[slot]["values"], 2) for slot in slots}  # [first, changed-to]
    changing = set(rng.sample(slots, n_changes))
    # Statements fall in the first 60% of the turns, changes after their statement and before the
    # last session's last few turns (the last turn is the closing line).
    usable = list(range(1, turns - 1))
    session_of = [min(n_sessions - 1, t * n_sessions // turns) for t in range(turns)]
    starts = {session_of[t] for t in range(turns)}
    first_turns = {min(t for t in range(turns) if session_of[t] == s) for s in starts}
    usable = [t for t in usable if t not in first_turns]
    stated_at = dict(zip(slots, sorted(rng.sample([t for t in usable if t < turns * 0.6], n_slots)), strict=True))
    events: dict[int, tuple[str, str]] = {t: ("state", slot) for slot, t in stated_at.items()}
    for slot in sorted(changing):
        later = [t for t in usable if t > stated_at[slot] + 2 and t not in events and t < turns - 2]
        events[rng.choice(later)] = ("change", slot)

    conversation = Conversation(seed=seed)
    facts: dict[str, Fact] = {}
    for t in range(turns):
        session = session_of[t]
        if t == turns - 1:
            user, kind = CLOSING, "small"
        elif t in first_turns:
            user, kind = rng.choice(GREETINGS), "greeting"
        elif t in events:
            what, slot = events[t]
            spec = SLOTS[slot]
            first, new = values[slot]
            if what == "state":
                user = rng.choice(spec["state"]).format(v=first)
                facts[slot] = Fact(slot, first, spec["question"], stated_session=session)
            else:
                user = rng.choice(spec["change"]).format(old=first, new=new)
                facts[slot] = Fact(
                    slot, new, spec["question"], old=first, stated_session=facts[slot].stated_session, changed_session=session
                )
            kind = "fact"
        else:
            kind = rng.choices(["question", "small", "paste"], weights=[5, 4, 1])[0]
            user = {"question": lambda: rng.choice(QUESTIONS), "small": lambda: rng.choice(SMALL_TALK), "paste": lambda: _paste(rng)}[
                kind
            ]()
        conversation.messages.append({"role": "user", "content": user, "session": session})
        conversation.messages.append({"role": "assistant", "content": rng.choice(REPLIES[kind]), "session": session})
    conversation.facts = [facts[slot] for slot in slots]
    return conversation


# --- scoring --------------------------------------------------------------------------------------
def _present(value: str, text: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(value.lower())}(?![\w])", text.lower()) is not None


@dataclass
class Score:
    facts: int
    present: int
    changed: int
    stale: int
    missing: list[str] = field(default_factory=list)
    stale_slots: list[str] = field(default_factory=list)

    @property
    def retention(self) -> float:
        return 100.0 * self.present / self.facts if self.facts else 100.0

    @property
    def stale_pct(self) -> float:
        return 100.0 * self.stale / self.changed if self.changed else 0.0


def score(context: list[dict] | str, facts: list[Fact]) -> Score:
    """Which current facts' values are present in ``context`` (the messages a model is sent, or
    their text), and which changed facts show the old value without the new one."""
    text = context if isinstance(context, str) else "\n".join(m["content"] for m in context)
    result = Score(facts=len(facts), present=0, changed=sum(1 for f in facts if f.old), stale=0)
    for fact in facts:
        if _present(fact.value, text):
            result.present += 1
        else:
            result.missing.append(fact.slot)
            if fact.old and _present(fact.old, text):
                result.stale += 1
                result.stale_slots.append(fact.slot)
    return result


def answer_correct(answer: str, fact: Fact) -> bool:
    """A real model's answer to ``fact.question`` is right if it contains the current value."""
    return _present(fact.value, answer)
