"""Memory as one run sees it: the engine's ``MemoryServices`` over the memory stores.

Every history a run touches is read and written here, the global one included: node and named
histories take each consuming node's exchange at once (``record_exchange``); the global history
(the conversation the participant sees) takes the turn's input and reply when the turn finishes
(``turn_finished``). What each strategy sends is ``strategies.plan``; summarizing is done here,
bounded by ``SKEIN_SUMMARY_TIMEOUT_S``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.conf import settings

from workflows.engine.services import MemoryBinding, MemoryContext, ModelRef

from . import selectors, services, strategies
from .keys import history_key
from .spec import GLOBAL, THREAD, HistoryRef, MemorySpec, Summary
from .summarizer import summarize
from .summary_prompt import summary_from_reply, summary_request
from .tokens import Tokenizer

logger = logging.getLogger("skein.memory")

GLOBAL_HISTORY = HistoryRef(kind=GLOBAL)


class MemoryRuntime:
    def __init__(
        self,
        *,
        workflow_id: int,
        run_id: int,
        thread_id: int | None,
        bind_model,
        tokenizer_of: Callable[[ModelRef | None], Tokenizer],
        warn,
        notify,
    ):
        self.workflow_id = workflow_id
        self.run_id = run_id
        self.thread_id = thread_id
        # (node_id, ModelRef, stream) -> call(messages, deadline=...) -> LLMResult; resolves the
        # provider here, so the call itself can run in the summarizer's thread without the database.
        self._bind_model = bind_model
        self._tokenizer_of = tokenizer_of
        self._warn = warn  # (node_id, message)
        self._notify = notify  # (event_type, data): memory.summarizing, memory.summarized
        self._histories: dict[tuple, object] = {}
        # The tokenizers of the models that read each history this turn: what is written to it
        # afterwards is counted for them at once.
        self._readers: dict[tuple, dict[str, Tokenizer]] = {}

    def _ident(self, ref: HistoryRef, scope: str) -> tuple:
        return (ref.kind, ref.name, history_key(scope, thread_id=self.thread_id, run_id=self.run_id))

    def _history(self, ident: tuple, *, create: bool, current: bool = False):
        """A history, read once per turn; ``current`` re-reads its position if it was read earlier
        in the turn (another node may have appended to it or replaced it since)."""
        if ident not in self._histories:
            lookup = dict(workflow_id=self.workflow_id, kind=ident[0], name=ident[1], key=ident[2])
            history = services.history_get_or_create(**lookup) if create else selectors.history_find(**lookup)
            if history is None:
                return None
            self._histories[ident] = history
        elif current:
            self._histories[ident].refresh_from_db(fields=["last_seq", "replaced_through"])
        return self._histories[ident]

    def _tokenizers(self, ident: tuple, extra: Tokenizer | None = None) -> tuple[Tokenizer, ...]:
        readers = dict(self._readers.get(ident, {}))
        if extra is not None:
            readers[extra.name] = extra
        return tuple(readers.values())

    # --- MemoryServices ---------------------------------------------------------------------------
    def context(self, binding: MemoryBinding) -> MemoryContext:
        spec: MemorySpec = binding.spec
        ident = self._ident(spec.history, spec.scope)
        tokenizer = self._tokenizer_of(binding.consumer_model)
        self._readers.setdefault(ident, {})[tokenizer.name] = tokenizer
        history = self._history(ident, create=isinstance(spec.strategy, Summary), current=True)
        plan = strategies.plan(spec, history, tokenizer)
        services.token_counts_store(rows=plan.counted)
        if plan.to_summarize:
            plan = self._summarize(binding, history, plan, tokenizer)
        return MemoryContext(
            messages=strategies.context_messages(spec.seeds, plan.summary, plan.kept), summary=plan.summary or None
        )

    def record_exchange(self, binding: MemoryBinding, user_text: str, model_text: str) -> None:
        spec: MemorySpec = binding.spec
        if spec.history.written_by_turn:
            return  # see turn_finished
        ident = self._ident(spec.history, spec.scope)
        entries = [{"role": "user", "content": user_text}, {"role": "assistant", "content": model_text}]
        services.history_append(
            history=self._history(ident, create=True),
            messages=entries,
            run_id=self.run_id,
            node=binding.consumer_node or "",
            tokenizers=self._tokenizers(ident, self._tokenizer_of(binding.consumer_model)),
        )

    def replace(self, binding: MemoryBinding, messages: list[dict]) -> None:
        spec: MemorySpec = binding.spec
        ident = self._ident(spec.history, spec.scope)
        services.history_replace(
            history=self._history(ident, create=True),
            messages=messages,
            run_id=self.run_id,
            node=spec.node,
            tokenizers=self._tokenizers(ident, self._tokenizer_of(binding.consumer_model)),
        )

    # --- the turn ---------------------------------------------------------------------------------
    def turn_finished(self, *, user_text: str, reply: str) -> None:
        """The turn's input and reply join the thread's global history (on top of anything a
        ``set_history`` put there during the turn). Called inside the turn's final transaction."""
        if not self.thread_id:
            return
        ident = self._ident(GLOBAL_HISTORY, THREAD)
        turn = [{"role": role, "content": text} for role, text in (("user", user_text), ("assistant", reply)) if text]
        services.history_append(
            history=self._history(ident, create=True), messages=turn, run_id=self.run_id, tokenizers=self._tokenizers(ident)
        )

    # --- summarizing ------------------------------------------------------------------------------
    def _summarize(self, binding: MemoryBinding, history, plan: strategies.Plan, tokenizer: Tokenizer) -> strategies.Plan:
        """Fold ``plan.to_summarize`` into the summary; on timeout or error send them uncompressed."""
        spec: MemorySpec = binding.spec
        strategy: Summary = spec.strategy
        model = strategy.summarizer(binding.consumer_model)
        timeout = float(settings.SKEIN_SUMMARY_TIMEOUT_S)
        first, last = plan.to_summarize[0]["seq"], plan.to_summarize[-1]["seq"]
        request = summary_request(prompt=strategy.prompt, previous_summary=plan.summary, messages=plan.to_summarize)
        record = dict(
            history=history,
            memory_node=spec.node,
            run_id=self.run_id,
            model=model.model if model else "",
            from_seq=first,
            through_seq=last,
            message_count=len(plan.to_summarize),
            messages=request,
        )
        cue = {"node": spec.node, "summarizer": strategy.summarizer_node(binding.consumer_node), "messages": len(plan.to_summarize)}
        self._notify("memory.summarizing", cue)
        started = time.monotonic()
        try:
            if model is None:
                raise RuntimeError("no summarizer model is attached")
            call = self._bind_model(spec.node, model, stream=False)
            result = summarize(lambda messages, deadline: call(messages, deadline=deadline), request, timeout=timeout)
            text = summary_from_reply(previous_summary=plan.summary, reply=result.text, messages=plan.to_summarize,
                                      prompt=strategy.prompt, request=request)
            if not text:
                raise RuntimeError("the summarizer answered with an empty summary")
        except Exception as exc:
            duration_ms = int((time.monotonic() - started) * 1000)
            message = f"summarization failed ({exc}); sent the uncompressed history instead"
            logger.warning("run %s, memory %s: %s", self.run_id, spec.node, message)
            services.summarization_record(status="failed", error=str(exc)[:2000], duration_ms=duration_ms, **record)
            self._warn(spec.node, message)
            return strategies.Plan(kept=plan.to_summarize + plan.kept, summary=plan.summary, summary_through=plan.summary_through)

        duration_ms = int((time.monotonic() - started) * 1000)
        services.summary_save(
            history=history, memory_node=spec.node, text=text, previous_through=plan.summary_through, through_seq=last,
            tokenizer=tokenizer,
        )
        services.summarization_record(
            status="ok", prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens, duration_ms=duration_ms,
            **record,
        )
        self._notify(
            "memory.summarized",
            {**cue, "through_seq": last, "duration_ms": duration_ms},
        )
        return strategies.Plan(kept=plan.kept, summary=text, summary_through=last)
