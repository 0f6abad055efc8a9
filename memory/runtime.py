"""Memory as one run sees it: the engine's ``MemoryServices`` over the memory stores."""

from __future__ import annotations

import logging
import time

from django.conf import settings

from workflows.engine.services import MemoryBinding, MemoryContext, ModelRef

from . import selectors, services, strategies
from .summarizer import summarize
from .summary_prompt import summary_from_reply, summary_request

logger = logging.getLogger("skein.memory")


def history_key(*, key_param: str, thread_id: int | None, run_id: int) -> str:
    """Thread-keyed memory follows the thread; runs without one bind it to the run id."""
    if key_param == "thread" and thread_id:
        return f"thread:{thread_id}"
    return f"run:{run_id}"


class MemoryRuntime:
    def __init__(self, *, workflow_id: int, run_id: int, thread_id: int | None, bind_model, warn, notify):
        self.workflow_id = workflow_id
        self.run_id = run_id
        self.thread_id = thread_id
        # (node_id, ModelRef, stream) -> (messages, timeout) -> LLMResult; resolves the provider here,
        # so the call itself can run in the summarizer's thread without touching the database.
        self._bind_model = bind_model
        self._warn = warn  # (node_id, message)
        self._notify = notify  # (event_type, data): memory.summarized
        self._histories: dict[tuple, object] = {}

    def _history(self, binding: MemoryBinding, create: bool, *, current: bool = False):
        """The binding's history, read once per turn; ``current`` re-reads its position if it was
        read earlier in the turn (another node may have appended to it since)."""
        key = history_key(key_param=binding.params.key, thread_id=self.thread_id, run_id=self.run_id)
        ident = (binding.history_kind, binding.history_name, key)
        if ident not in self._histories:
            lookup = dict(workflow_id=self.workflow_id, kind=ident[0], name=ident[1], key=ident[2])
            history = services.history_get_or_create(**lookup) if create else selectors.history_find(**lookup)
            if history is None:
                return None
            self._histories[ident] = history
        elif current:
            self._histories[ident].refresh_from_db(fields=["last_seq", "replaced_through"])
        return self._histories[ident]

    def context(self, binding: MemoryBinding) -> MemoryContext:
        history = self._history(binding, create=binding.memory_type == "memory.summary", current=True)
        plan = strategies.plan(binding.memory_type, binding.params, history, binding.memory_node)
        if plan.to_summarize:
            plan = self._summarize(binding, history, plan)
        return MemoryContext(
            messages=strategies.context_messages(binding.params.seed_messages, plan.summary, plan.kept),
            summary=plan.summary or None,
        )

    def record(self, binding: MemoryBinding, entries: list[dict]) -> None:
        services.history_append(
            history=self._history(binding, create=True), messages=entries, run_id=self.run_id, node=binding.consumer_node or ""
        )

    def replace(self, binding: MemoryBinding, messages: list[dict]) -> None:
        services.history_replace(
            history=self._history(binding, create=True), messages=messages, run_id=self.run_id, node=binding.memory_node
        )

    def _summarize(self, binding: MemoryBinding, history, plan: strategies.Plan) -> strategies.Plan:
        """Fold ``plan.to_summarize`` into the summary; on timeout or error send them uncompressed."""
        model: ModelRef | None = binding.summarizer_model
        timeout = float(settings.SKEIN_SUMMARY_TIMEOUT_S)
        first, last = plan.to_summarize[0]["seq"], plan.to_summarize[-1]["seq"]
        request = summary_request(
            prompt=binding.params.summary_prompt, previous_summary=plan.summary, messages=plan.to_summarize
        )
        started = time.monotonic()
        record = dict(
            history=history,
            memory_node=binding.memory_node,
            run_id=self.run_id,
            model=model.model if model else "",
            from_seq=first,
            through_seq=last,
            message_count=len(plan.to_summarize),
            messages=request,
        )
        try:
            if model is None:
                raise RuntimeError("no summarizer model is attached")
            summarizer_ref = ModelRef(model=model.model, provider=model.provider, temperature=0.2)
            call = self._bind_model(binding.memory_node, summarizer_ref, stream=False)
            result = summarize(call, request, timeout=timeout)
            text = summary_from_reply(previous_summary=plan.summary, reply=result.text)
            if not text:
                raise RuntimeError("the summarizer answered with an empty summary")
        except Exception as exc:
            duration_ms = int((time.monotonic() - started) * 1000)
            message = f"summarization failed ({exc}); sent the uncompressed history instead"
            logger.warning("run %s, memory %s: %s", self.run_id, binding.memory_node, message)
            services.summarization_record(status="failed", error=str(exc)[:2000], duration_ms=duration_ms, **record)
            self._warn(binding.memory_node, message)
            return strategies.Plan(kept=plan.to_summarize + plan.kept, summary=plan.summary, summary_through=plan.summary_through)

        duration_ms = int((time.monotonic() - started) * 1000)
        services.summary_save(
            history=history, memory_node=binding.memory_node, text=text, previous_through=plan.summary_through, through_seq=last
        )
        services.summarization_record(
            status="ok",
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            duration_ms=duration_ms,
            **record,
        )
        self._notify(
            "memory.summarized",
            {"node": binding.memory_node, "through_seq": last, "messages": len(plan.to_summarize), "duration_ms": duration_ms},
        )
        return strategies.Plan(kept=plan.kept, summary=text, summary_through=last)
