"""Memory as one run sees it: the engine's ``MemoryServices`` over the memory stores.

Every history a run touches is read and written here, the global one included: node and named
histories take each consuming node's exchange at once (``record_exchange``); the global history
(the conversation the participant sees) takes the turn's input and reply when the turn finishes
(``turn_finished``). What each strategy sends is ``strategies.plan``; summarizing is done here,
bounded by ``SKEIN_SUMMARY_TIMEOUT_S``. ``memory.facts`` sends the participant's current facts and,
once the turn is answered, extracts new and changed ones (``after_turn``, bounded the same way).

Participant-keyed memory is kept under the run's participant (``keys.history_key``); a run with no
participant keeps it by the thread, as thread-keyed memory, and says so in the run's warnings.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.conf import settings

from engine.interfaces import MemoryBinding, MemoryContext, ModelRef
from memory import facts as fact_rules
from memory import facts_services, selectors, services, strategies
from memory.keys import falls_back, history_key, participant_key
from memory.spec import GLOBAL, THREAD, Facts, HistoryRef, MemorySpec, Summary
from memory.summarizer import SummaryTimeout, summarize
from memory.summary_prompt import summary_from_reply, summary_request
from memory.tokens import Tokenizer
from memory.tool_rounds import as_text

logger = logging.getLogger("skein.memory")

GLOBAL_HISTORY = HistoryRef(kind=GLOBAL)


class MemoryRuntime:
    def __init__(
        self,
        *,
        workflow_id: int,
        run_id: int,
        thread_id: int | None,
        participant_id: int | None = None,
        bind_model,
        tokenizer_of: Callable[[ModelRef | None], Tokenizer],
        warn,
        notify,
    ):
        self.workflow_id = workflow_id
        self.run_id = run_id
        self.thread_id = thread_id
        self.participant_id = participant_id
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
        self._fallbacks_noted: set[str] = set()
        # memory.facts bindings that took part in the turn -> the exchange to extract facts from
        self._extractions: dict[str, tuple[MemoryBinding, str, str]] = {}
        # The tool rounds of the nodes that read the global history: they join it with the turn.
        self._turn_rounds: dict[str | None, list[dict]] = {}

    def _key(self, spec: MemorySpec) -> str:
        if falls_back(spec.scope, participant_id=self.participant_id) and spec.node not in self._fallbacks_noted:
            self._fallbacks_noted.add(spec.node)
            self._warn(spec.node, "this run has no participant: memory keyed by participant is kept by the thread instead")
        return history_key(spec.scope, thread_id=self.thread_id, run_id=self.run_id, participant_id=self.participant_id)

    def _ident(self, ref: HistoryRef, scope: str, spec: MemorySpec | None = None) -> tuple:
        if spec is not None:
            return (ref.kind, ref.name, self._key(spec))
        return (ref.kind, ref.name, history_key(scope, thread_id=self.thread_id, run_id=self.run_id, participant_id=self.participant_id))

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
        if isinstance(spec.strategy, Facts):
            message = fact_rules.context_message(selectors.facts_current(workflow_id=self.workflow_id, key=self._key(spec)))
            return MemoryContext(messages=[message] if message else [], first=True)
        ident = self._ident(spec.history, spec.scope, spec)
        tokenizer = self._tokenizer_of(binding.consumer_model)
        self._readers.setdefault(ident, {})[tokenizer.name] = tokenizer
        # A participant's global history is made when first read: the turn then adds to it (turn_finished).
        participant_global = spec.history.kind == GLOBAL and ident[2].startswith("participant:")
        history = self._history(ident, create=isinstance(spec.strategy, Summary) or participant_global, current=True)
        plan = strategies.plan(spec, history, tokenizer)
        services.token_counts_store(rows=plan.counted)
        if plan.to_summarize:
            plan = self._summarize(binding, history, plan, tokenizer)
        messages = strategies.context_messages(spec.seeds, plan.summary, plan.kept, tools=binding.consumer_tools)
        return MemoryContext(messages=messages, summary=plan.summary or None)

    def record_exchange(self, binding: MemoryBinding, user_text: str, model_text: str, rounds: list[dict] = ()) -> None:
        spec: MemorySpec = binding.spec
        if isinstance(spec.strategy, Facts):
            self._extractions[spec.node] = (binding, user_text, model_text)  # see after_turn
            return
        if spec.history.written_by_turn:
            if rounds and binding.consumer_node not in self._turn_rounds:
                self._turn_rounds[binding.consumer_node] = list(rounds)  # see turn_finished
            return
        ident = self._ident(spec.history, spec.scope, spec)
        entries = [{"role": "user", "content": user_text}, *rounds, {"role": "assistant", "content": model_text}]
        services.history_append(
            history=self._history(ident, create=True),
            messages=entries,
            run_id=self.run_id,
            node=binding.consumer_node or "",
            tokenizers=self._tokenizers(ident, self._tokenizer_of(binding.consumer_model)),
        )

    def replace(self, binding: MemoryBinding, messages: list[dict]) -> None:
        spec: MemorySpec = binding.spec
        ident = self._ident(spec.history, spec.scope, spec)
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
        rounds = [message for node_rounds in self._turn_rounds.values() for message in node_rounds]
        turn = ([{"role": "user", "content": user_text}] if user_text else []) + rounds
        turn += [{"role": "assistant", "content": reply}] if reply else []
        if self.thread_id:
            ident = self._ident(GLOBAL_HISTORY, THREAD)
            services.history_append(
                history=self._history(ident, create=True), messages=turn, run_id=self.run_id, tokenizers=self._tokenizers(ident)
            )
        if self.participant_id:
            # The participant's own global history (their conversation across threads): kept once
            # a participant-keyed memory of the global history read it (then on every turn).
            ident = (GLOBAL, "", participant_key(self.participant_id))
            history = self._histories.get(ident) or selectors.history_find(workflow_id=self.workflow_id, kind=GLOBAL, name="", key=ident[2])
            if history is not None:
                self._histories[ident] = history
                services.history_append(history=history, messages=turn, run_id=self.run_id, tokenizers=self._tokenizers(ident))

    # --- facts ------------------------------------------------------------------------------------
    def after_turn(self) -> None:
        """Each ``memory.facts`` of the turn extracts new and changed facts from its exchange:
        bounded by ``SKEIN_SUMMARY_TIMEOUT_S`` (retries inside it); on timeout or error the facts
        stay as they were and the run says so. Runs after the turn answered, before it finishes."""
        for binding, user_text, model_text in list(self._extractions.values()):
            self._extract(binding, user_text, model_text)
        self._extractions.clear()

    def _extract(self, binding: MemoryBinding, user_text: str, model_text: str) -> None:
        spec: MemorySpec = binding.spec
        strategy: Facts = spec.strategy
        key = self._key(spec)
        model = strategy.extractor(binding.consumer_model)
        known = selectors.facts_current(workflow_id=self.workflow_id, key=key)
        request = fact_rules.extraction_request(prompt=strategy.prompt, facts=known, user_text=user_text, reply=model_text)
        participant_id = self.participant_id if key.startswith("participant:") else None
        record = {
            "workflow_id": self.workflow_id,
            "key": key,
            "participant_id": participant_id,
            "memory_node": spec.node,
            "run_id": self.run_id,
            "model": model.model if model else "",
            "messages": request,
        }
        timeout = float(settings.SKEIN_SUMMARY_TIMEOUT_S)
        started = time.monotonic()
        result = None
        try:
            if model is None:
                raise RuntimeError("no model is attached to extract facts with")
            call = self._bind_model(spec.node, model, stream=False)
            try:
                result = summarize(lambda messages, deadline: call(messages, deadline=deadline), request, timeout=timeout)
            except SummaryTimeout:
                raise SummaryTimeout(f"the fact extraction did not answer within {timeout:g}s") from None
            found = fact_rules.parse_answer(result.text)
            added, updated, dropped = facts_services.facts_apply(
                workflow_id=self.workflow_id,
                key=key,
                participant_id=participant_id,
                found=found,
                max_facts=strategy.max_facts,
                source_message=user_text,
                run_id=self.run_id,
            )
        except Exception as exc:
            message = f"fact extraction failed ({exc}); the facts stay as they were"
            logger.warning("run %s, memory %s: %s", self.run_id, spec.node, message)
            facts_services.extraction_record(
                status="failed",
                error=str(exc)[:2000],
                duration_ms=int((time.monotonic() - started) * 1000),
                reply=(result.text if result else "")[:20000],
                **record,
            )
            self._warn(spec.node, message)
            return
        facts_services.extraction_record(
            status="ok",
            added=added,
            updated=updated,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            duration_ms=int((time.monotonic() - started) * 1000),
            reply=result.text[:20000],
            **record,
        )
        if dropped:
            self._warn(spec.node, f"{dropped} new fact(s) left out: this memory keeps at most {strategy.max_facts} facts")
        self._notify("memory.facts", {"node": spec.node, "added": added, "updated": updated})

    # --- summarizing ------------------------------------------------------------------------------
    def _summarize(self, binding: MemoryBinding, history, plan: strategies.Plan, tokenizer: Tokenizer) -> strategies.Plan:
        """Fold ``plan.to_summarize`` into the summary; on timeout or error send them uncompressed."""
        spec: MemorySpec = binding.spec
        strategy: Summary = spec.strategy
        model = strategy.summarizer(binding.consumer_model)
        timeout = float(settings.SKEIN_SUMMARY_TIMEOUT_S)
        first, last = plan.to_summarize[0]["seq"], plan.to_summarize[-1]["seq"]
        folded = as_text(plan.to_summarize)  # tool rounds are folded as text, like the other messages
        request = summary_request(prompt=strategy.prompt, previous_summary=plan.summary, messages=folded)
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
            text = summary_from_reply(
                previous_summary=plan.summary, reply=result.text, messages=folded, prompt=strategy.prompt, request=request
            )
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
            history=history,
            memory_node=spec.node,
            text=text,
            previous_through=plan.summary_through,
            through_seq=last,
            tokenizer=tokenizer,
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
            {**cue, "through_seq": last, "duration_ms": duration_ms},
        )
        return strategies.Plan(kept=plan.kept, summary=text, summary_through=last)
