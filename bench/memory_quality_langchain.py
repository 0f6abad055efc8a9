"""The memory-quality baseline: LangChain's ``SummarizationMiddleware`` (``langchain`` 1.x), with
its own default prompt, on the same turns, the same model (the bundled SmolLM2 through litellm, at
the summarizer temperature Skein uses) and the same thresholds (summarize when the messages reach
20, keep the newest 6).

The middleware runs as in an agent: the participant's message joins the state, ``before_model``
may replace older messages with a summary message, the consuming model (scripted here, as for
Skein) is sent the system prompt and the state, and its reply joins the state. A summarization that
raises (the model failed, or the request did not fit its context) leaves the state unsummarized,
counted as a failure: the turn goes on, as Skein's would.
"""

from __future__ import annotations

import time
from typing import Any

from .common import log
from .memory_quality_data import Conversation

LOCAL_MODEL = "skein-local/smollm2"
TEMPERATURE = 0.2  # memory.spec.FROM_PARENT_TEMPERATURE


def _chat_model(stats: dict):
    """A LangChain chat model that calls litellm (as Skein does), counting calls, tokens and time."""
    import litellm
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    import providers.llm  # noqa: F401  (registers the bundled model with litellm)

    role = {"human": "user", "ai": "assistant", "system": "system"}

    class LiteLLMChat(BaseChatModel):
        model: str = LOCAL_MODEL

        @property
        def _llm_type(self) -> str:
            return "skein-bench-litellm"

        def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
            sent = [{"role": role.get(m.type, "user"), "content": m.text} for m in messages]
            started = time.monotonic()
            stats["calls"] += 1
            try:
                response = litellm.completion(model=self.model, messages=sent, temperature=TEMPERATURE)
            finally:
                stats["seconds"] += time.monotonic() - started
            usage = response.usage
            stats["prompt_tokens"] += usage.prompt_tokens
            stats["completion_tokens"] += usage.completion_tokens
            stats["requests"].append(sent)
            text = response.choices[0].message.content or ""
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    return LiteLLMChat()


def replay(conversation: Conversation, *, system_prompt: str, trigger_messages: int, keep_messages: int) -> dict:
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.messages import AIMessage, HumanMessage

    stats = {"calls": 0, "failed": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0, "requests": []}
    model = _chat_model(stats)
    middleware = SummarizationMiddleware(model=model, trigger=("messages", trigger_messages), keep=("messages", keep_messages))
    state: list = []
    sent_per_turn: list[list[dict]] = []
    started = time.monotonic()
    for user, reply in conversation.turns():
        state.append(HumanMessage(user))
        try:
            update = middleware.before_model({"messages": state}, None)
        except Exception as exc:  # the turn goes on unsummarized
            stats["failed"] += 1
            log(f"memory_quality: LangChain summarization failed: {type(exc).__name__}: {str(exc)[:200]}")
            update = None
        if update:
            state = list(update["messages"][1:])  # [RemoveMessage(all), summary, *kept]
        sent_per_turn.append(
            [{"role": "system", "content": system_prompt}]
            + [{"role": "assistant" if m.type == "ai" else "user", "content": m.text} for m in state]
        )
        state.append(AIMessage(reply))
    summary = next((m.text for m in state if (m.additional_kwargs or {}).get("lc_source") == "summarization"), "")
    return {
        "sent": sent_per_turn,
        "summarizer": stats,
        "warnings": stats["failed"],
        "failed_runs": 0,
        "replay_seconds": time.monotonic() - started,
        "summary": summary,
    }
