"""What memory a thread has, as its models would see it next (read side of the thread memory API,
``runs.api.memory``). A thread here is anything with ``pk``, ``workflow_id`` and ``owner_id``."""

from __future__ import annotations

from dataclasses import dataclass

from engine.graph import Graph
from engine.interfaces import MemoryBinding
from engine.validation import analyze
from memory import selectors, services, strategies
from memory.keys import thread_key
from memory.spec import NAMED, THREAD, Facts, MemorySpec, Summary
from memory.tokens import Tokenizer, tokenizer_for
from memory.tool_rounds import as_openai


@dataclass(frozen=True)
class ThreadMemory:
    binding: MemoryBinding
    node_type: str  # the memory node's type, as the editor names it

    @property
    def spec(self) -> MemorySpec:
        return self.binding.spec


def thread_memories(graph: dict) -> list[ThreadMemory]:
    """The thread-keyed memories of ``graph`` (the one the thread last ran), each bound to its first
    consumer."""
    analysis = analyze(Graph.parse(graph))
    memories = []
    for node_id, rn in sorted(analysis.nodes.items()):
        binding = analysis.memory_binding(node_id)
        if binding.spec is not None and binding.spec.scope == THREAD and not isinstance(binding.spec.strategy, Facts):
            memories.append(ThreadMemory(binding=binding, node_type=rn.node_type.type))
    return memories


def memory_name(spec: MemorySpec) -> str:
    """How the API names a memory: its named history's name, else its node id."""
    return spec.history.name if spec.history.kind == NAMED else spec.node


def find_memory(graph: dict, name: str) -> ThreadMemory | None:
    """A memory of ``graph`` by its node id, or the first one serving the named history ``name``."""
    memories = thread_memories(graph)
    for memory in memories:
        if memory.spec.node == name:
            return memory
    for memory in memories:
        if memory.spec.history.kind == NAMED and memory.spec.history.name == name:
            return memory
    return None


def memory_history(thread, spec: MemorySpec, *, create: bool = False):
    lookup = dict(workflow_id=thread.workflow_id, kind=spec.history.kind, name=spec.history.name, key=thread_key(thread.pk))
    return services.history_get_or_create(**lookup) if create else selectors.history_find(**lookup)


def consumer_tokenizer(thread, binding: MemoryBinding) -> Tokenizer:
    from providers.models import Provider

    ref = binding.consumer_model
    if ref is None:
        return tokenizer_for(None)
    kind = None
    if ref.provider is not None:
        kind = Provider.objects.filter(pk=ref.provider, owner_id=thread.owner_id).values_list("kind", flat=True).first()
    return tokenizer_for(ref.model, kind)


def memory_view(thread, memory: ThreadMemory) -> dict:
    spec = memory.spec
    tokenizer = consumer_tokenizer(thread, memory.binding)
    history = memory_history(thread, spec)
    plan = strategies.plan(spec, history, tokenizer)
    services.token_counts_store(rows=plan.counted)
    messages = [{**m, "token_count": tokenizer.count_message(m["role"], m["content"])} for m in spec.seeds]
    if plan.summary:
        text = strategies.SUMMARY_PREFIX + plan.summary
        messages.append({"role": "system", "content": text, "token_count": tokenizer.count_message("system", text)})
    # A due summarization happens when the model is next called; until then all of it would be sent.
    kept = plan.to_summarize + plan.kept
    messages += [{**as_openai(m), "token_count": m["token_count"]} for m in kept]
    return {
        "name": memory_name(spec),
        "node": spec.node,
        "type": memory.node_type,
        "history": spec.history.kind,
        "summarizes": isinstance(spec.strategy, Summary),
        "summary": plan.summary,
        "summary_through": plan.summary_through,
        "summarize_next": bool(plan.to_summarize),
        "tokenizer": tokenizer.name,
        "messages": messages,
        "token_count": sum(m["token_count"] for m in messages),
    }
