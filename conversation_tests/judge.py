"""The judge: a model grades a reply against a rubric and answers pass or fail with a reason.

It is called like every model (``providers.llm.complete``, with the same timeout and retries),
asking for structured output where litellm knows the model supports a JSON schema, and always
parsing the answer strictly: a verdict that is not exactly ``{"verdict": "pass"|"fail", "reason":
...}`` is the judge's failure, an ``error`` on the check, never a pass or a fail. So are a
timeout, a refusal and a provider error. Its tokens and cost are the test run's.
"""

from __future__ import annotations

import json
import logging

from conversation_tests.checks import ERROR, FAILED, PASSED, Verdict, shown
from engine.interfaces import ModelRef
from engine.registry import NodeError
from providers import llm
from providers.models import Provider

logger = logging.getLogger("skein.tests")

JUDGE_MAX_TOKENS = 300
CONTEXT_TURNS = 10  # earlier turns of the test shown to the judge
INSTRUCTIONS = (
    "You grade one reply of a chatbot against a rubric. You are given the rubric, the conversation "
    "before the reply, and the reply. Decide whether the reply satisfies the rubric; judge only the "
    "reply. Answer with a JSON object and nothing else: "
    '{"verdict": "pass" or "fail", "reason": "one short sentence saying why"}.'
)
SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["pass", "fail"]}, "reason": {"type": "string"}},
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}
RESPONSE_FORMAT = {"type": "json_schema", "json_schema": {"name": "verdict", "strict": True, "schema": SCHEMA}}


class Unreadable(ValueError):
    pass


def judge_request(*, rubric: str, conversation: list[dict], reply: str) -> list[dict]:
    """What the judge is sent: the instructions, then the rubric, the conversation and the reply."""
    lines = [f"{m['role'].capitalize()}: {shown(m['content'])}" for m in conversation[-2 * CONTEXT_TURNS :]]
    before = "\n".join(lines) if lines else "(this reply answers the first message)"
    return [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": f"Rubric:\n{rubric}\n\nConversation before the reply:\n{before}\n\nReply to grade:\n{reply}"},
    ]


def parse_verdict(text: str) -> tuple[bool, str]:
    """(passed, reason) from the judge's answer; ``Unreadable`` unless it is exactly the JSON asked for
    (a Markdown code fence around it is tolerated)."""
    body = text.strip()
    if body.startswith("```"):
        body = body.removeprefix("```json").removeprefix("```JSON").removeprefix("```").removesuffix("```").strip()
    if not body:
        raise Unreadable("the judge gave no answer (a refusal, or an empty reply)")
    try:
        data = json.loads(body)
    except ValueError:
        raise Unreadable(f"the judge's answer is not the JSON verdict asked for: {shown(text)!r}") from None
    if not isinstance(data, dict) or set(data) != {"verdict", "reason"}:
        raise Unreadable(f'the judge\'s answer is not {{"verdict", "reason"}}: {shown(text)!r}')
    verdict, reason = data["verdict"], data["reason"]
    if not isinstance(verdict, str) or verdict.strip().lower() not in ("pass", "fail") or not isinstance(reason, str):
        raise Unreadable(f"the judge's verdict is neither pass nor fail: {shown(text)!r}")
    return verdict.strip().lower() == "pass", reason.strip() or "(no reason given)"


def judge_reply(*, owner_id: int, rubric: str, model: str, provider: int | None, conversation: list[dict], reply: str) -> Verdict:
    """Grade ``reply``; every failure of the judge itself is an ``error`` verdict with the reason."""
    source = None
    if provider is not None:
        source = Provider.objects.filter(pk=provider, owner_id=owner_id).first()
        if source is None:
            return Verdict(ERROR, f"the judge's provider {provider} does not exist")
    ref = ModelRef(model=model, provider=provider, temperature=0.0, max_tokens=JUDGE_MAX_TOKENS)
    request = judge_request(rubric=rubric, conversation=conversation, reply=reply)
    try:
        result = llm.complete(ref, source, request, response_format=RESPONSE_FORMAT if llm.supports_response_schema(ref, source) else None)
    except NodeError as exc:
        return Verdict(ERROR, f"the judge failed: {exc}")
    usage = dict(prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens, cost=result.cost)
    try:
        passed, reason = parse_verdict(result.text)
    except Unreadable as exc:
        logger.warning("judge %s: %s", model, exc)
        return Verdict(ERROR, str(exc), {"judge_answer": shown(result.text)}, **usage)
    return Verdict(PASSED if passed else FAILED, f"judge ({model}): {reason}", {"reason": reason}, **usage)
