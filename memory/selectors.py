"""Reads of memory stores. None of these load a whole history: costs follow what a model is sent.

Rows are dicts with ``seq``, ``role``, ``content`` and ``token_counts`` (by tokenizer name);
``counted`` adds ``token_count`` for one tokenizer.
"""

from __future__ import annotations

from memory.keys import thread_key
from memory.models import Fact, FactExtraction, History, HistoryMessage, Summary
from memory.tokens import Tokenizer
from memory.tool_rounds import as_openai, countable

FIELDS = ("id", "seq", "role", "content", "tool_calls", "tool_call_id", "token_counts")


def history_find(*, workflow_id: int, kind: str, name: str, key: str) -> History | None:
    # At most one (unique together); slicing skips the ORDER BY that first() would add.
    return next(iter(History.objects.filter(workflow_id=workflow_id, kind=kind, name=name, key=key)[:1]), None)


def _live(history: History, after_seq: int = 0):
    return HistoryMessage.objects.filter(history=history, seq__gt=max(after_seq, history.replaced_through))


def counted(rows: list[dict], tokenizer: Tokenizer) -> list[dict]:
    """Give each row its ``token_count`` for ``tokenizer``; rows that had none for it are counted
    now and listed in the result, for the caller to store (``services.token_counts_store``)."""
    missing = []
    for row in rows:
        count = row["token_counts"].get(tokenizer.name)
        if count is None:
            count = tokenizer.count_message(row["role"], countable(row))
            row["token_counts"] = {**row["token_counts"], tokenizer.name: count}
            missing.append(row)
        row["token_count"] = count
    return missing


def history_all(*, history: History, after_seq: int = 0) -> list[dict]:
    return list(_live(history, after_seq).order_by("seq").values(*FIELDS))


def history_newest(*, history: History, count: int) -> list[dict]:
    rows = list(_live(history).order_by("-seq").values(*FIELDS)[:count])
    rows.reverse()
    return rows


def history_newest_within(
    *, history: History, max_tokens: int, tokenizer: Tokenizer, max_messages: int | None = None, batch: int = 64
) -> tuple[list[dict], list[dict]]:
    """The newest messages whose token counts fit ``max_tokens`` (and ``max_messages``), and the
    rows among them that had no count for ``tokenizer`` yet."""
    kept: list[dict] = []
    missing: list[dict] = []
    total = 0
    before = None
    while True:
        query = _live(history).order_by("-seq")
        if before is not None:
            query = query.filter(seq__lt=before)
        rows = list(query.values(*FIELDS)[:batch])
        for row in rows:
            missing += counted([row], tokenizer)
            if total + row["token_count"] > max_tokens or (max_messages is not None and len(kept) >= max_messages):
                kept.reverse()
                return kept, missing
            total += row["token_count"]
            kept.append(row)
        if len(rows) < batch:
            kept.reverse()
            return kept, missing
        before = rows[-1]["seq"]
        batch = min(batch * 2, 1024)


def summary_for(*, history: History, memory_node: str) -> Summary | None:
    return Summary.objects.filter(history=history, memory_node=memory_node).first()


def summary_state(*, history: History | None, summary: Summary | None) -> tuple[str, int]:
    """(text, last seq it covers) of a memory's running summary of ``history``.

    A replacement of the history leaves no summary: it starts again, empty, from the replacement
    (``history_replace`` resets every summary; a memory whose first summary is still to come has
    no row yet). This is the one rule both readers and ``summary_save`` apply."""
    floor = history.replaced_through if history is not None else 0
    if summary is None or summary.covers_through < floor:
        return "", floor
    return summary.text, summary.covers_through


def thread_histories(*, workflow_id: int, thread_id: int) -> list[History]:
    return list(History.objects.filter(workflow_id=workflow_id, key=thread_key(thread_id)).order_by("kind", "name"))


def history_summaries(*, history: History) -> list[Summary]:
    return list(Summary.objects.filter(history=history).order_by("memory_node"))


def thread_export(*, workflow_id: int, thread_id: int) -> dict:
    """Every history of a thread, with each message's seq and the summaries of it: what the memory
    inspector's export writes and its import reads back."""
    histories = []
    for history in thread_histories(workflow_id=workflow_id, thread_id=thread_id):
        messages = [{"seq": m["seq"], **as_openai(m)} for m in history_all(history=history)]
        summaries = []
        for summary in history_summaries(history=history):
            text, through = summary_state(history=history, summary=summary)
            if text:
                summaries.append({"node": summary.memory_node, "text": text, "through_seq": through})
        histories.append({"history": history.kind, "name": history.name, "messages": messages, "summaries": summaries})
    return {"thread": thread_id, "workflow": workflow_id, "histories": histories}


def facts_current(*, workflow_id: int, key: str) -> list[dict]:
    """The facts a model is sent: current ones, oldest first (``{name, value}`` each)."""
    return list(
        Fact.objects.filter(workflow_id=workflow_id, key=key, superseded__isnull=True).order_by("created", "id").values("name", "value")
    )


def participant_histories(*, participant_id: int) -> list[History]:
    """The histories kept under a participant, in every workflow (each is the owner's: a
    participant belongs to one owner)."""
    from memory.keys import participant_key

    return list(
        History.objects.filter(key=participant_key(participant_id)).select_related("workflow").order_by("workflow_id", "kind", "name")
    )


def participant_facts(*, participant_id: int, workflow_id: int | None = None, current_only: bool = False):
    """A participant's facts (newest first within each key), superseded ones too unless ``current_only``."""
    query = Fact.objects.filter(participant_id=participant_id).select_related("workflow")
    if workflow_id:
        query = query.filter(workflow_id=workflow_id)
    if current_only:
        query = query.filter(superseded__isnull=True)
    return query.order_by("workflow_id", "name", "-created", "-id")


def fact_get(*, owner, fact_id) -> Fact | None:
    return Fact.objects.filter(pk=fact_id, workflow__owner=owner).select_related("workflow").first()


def participant_extractions(*, participant_id: int, limit: int = 20):
    return list(FactExtraction.objects.filter(participant_id=participant_id).order_by("-id")[:limit])
