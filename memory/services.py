"""Writes to memory stores. Appends and replacements take a row lock on the history, so two
writers never allocate the same sequence number; nothing is ever deleted by a strategy."""

from __future__ import annotations

from django.db import transaction

from core.text import storable
from memory import selectors
from memory.keys import thread_key
from memory.models import Fact, FactExtraction, History, HistoryMessage, Summarization, Summary
from memory.tokens import Tokenizer, default_tokenizer
from memory.tool_rounds import countable


class MemoryInputError(ValueError):
    """Input that cannot be stored as asked (an import's summary covering messages it lacks...)."""


def history_get_or_create(*, workflow_id: int, kind: str, name: str, key: str) -> History:
    history, _ = History.objects.get_or_create(workflow_id=workflow_id, kind=kind, name=name, key=key)
    return history


def history_append(
    *, history: History, messages: list[dict], run_id: int | None = None, node: str = "", tokenizers: tuple[Tokenizer, ...] = ()
) -> list[HistoryMessage]:
    """Append messages, counted with ``tokenizers`` (the models known to read this history; others
    count them when they first read them)."""
    if not messages:
        return []
    # No savepoint inside the turn's final transaction (two round trips saved per turn): a failure
    # here fails that whole transaction anyway.
    with transaction.atomic(savepoint=False):
        locked = History.objects.select_for_update().get(pk=history.pk)
        seq = locked.last_seq
        rows = []
        for message in messages:
            seq += 1
            content = storable(message.get("content") or "")
            tool_calls = message.get("tool_calls") or None
            counted = countable({"content": content, "tool_calls": tool_calls})
            counts = {t.name: t.count_message(message["role"], counted) for t in tokenizers}
            rows.append(
                HistoryMessage(
                    history=locked,
                    seq=seq,
                    role=message["role"],
                    content=content,
                    tool_calls=tool_calls,
                    tool_call_id=message.get("tool_call_id") or "",
                    token_counts=counts,
                    run_id=run_id,
                    node=node,
                )
            )
        HistoryMessage.objects.bulk_create(rows)
        History.objects.filter(pk=locked.pk).update(last_seq=seq)
    history.last_seq = seq
    return rows


def token_counts_store(*, rows: list[dict]) -> None:
    """Store counts that a read had to take (rows from ``selectors.counted``): once per tokenizer."""
    if rows:
        HistoryMessage.objects.bulk_update(
            [HistoryMessage(id=row["id"], token_counts=row["token_counts"]) for row in rows], ["token_counts"]
        )


def history_replace(
    *, history: History, messages: list[dict], run_id: int | None = None, node: str = "", tokenizers: tuple[Tokenizer, ...] = ()
) -> list[HistoryMessage]:
    """Replace what the history holds. Old messages stay stored but leave the history; every
    summary of it starts again from the replacement (it described the old messages), and the next
    summary is saved and extended like any other."""
    with transaction.atomic():
        locked = History.objects.select_for_update().get(pk=history.pk)
        History.objects.filter(pk=locked.pk).update(replaced_through=locked.last_seq)
        Summary.objects.filter(history=locked).update(text="", token_count=0, covers_through=locked.last_seq)
        history.replaced_through = locked.last_seq
        history.last_seq = locked.last_seq
        return history_append(history=history, messages=messages, run_id=run_id, node=node, tokenizers=tokenizers)


def history_clear(*, history: History) -> None:
    history_replace(history=history, messages=[])


def summary_save(
    *, history: History, memory_node: str, text: str, previous_through: int, through_seq: int, tokenizer: Tokenizer | None = None
) -> bool:
    """Store a new summary, unless the summary moved on meanwhile (another writer, or a
    replacement of the history): then False and nothing changes."""
    with transaction.atomic():
        locked = History.objects.select_for_update().get(pk=history.pk)
        summary = Summary.objects.select_for_update().filter(history=locked, memory_node=memory_node).first()
        _, current_through = selectors.summary_state(history=locked, summary=summary)
        if current_through != previous_through or through_seq <= current_through:
            return False
        if summary is None:
            summary = Summary(history=locked, memory_node=memory_node)
        summary.text = text
        summary.covers_through = through_seq
        summary.token_count = (tokenizer or default_tokenizer()).count_text(text)
        summary.save()
    return True


def summary_edit(*, history: History, memory_node: str, text: str, tokenizer: Tokenizer | None = None) -> Summary:
    """An owner's edit of a running summary's text: the messages it covers stay covered (a memory
    with no summary yet gets one covering nothing, which the next summarization extends)."""
    with transaction.atomic():
        locked = History.objects.select_for_update().get(pk=history.pk)
        summary = Summary.objects.select_for_update().filter(history=locked, memory_node=memory_node).first()
        _, through = selectors.summary_state(history=locked, summary=summary)
        if summary is None:
            summary = Summary(history=locked, memory_node=memory_node)
        summary.text = storable(text)
        summary.covers_through = through
        summary.token_count = (tokenizer or default_tokenizer()).count_text(summary.text)
        summary.save()
    return summary


def history_import(*, history: History, messages: list[dict], summaries: list[dict]) -> None:
    """Replace the history with exported ``messages`` (each with the ``seq`` it had) and restore
    the ``summaries`` of it (``{node, text, through_seq}``, ``through_seq`` one of the messages'
    seqs). Raises ``MemoryInputError`` before changing anything if a summary refers to a message
    the import does not hold."""
    seqs = [m.get("seq") for m in messages]
    positions = {seq: index for index, seq in enumerate(seqs) if seq is not None}
    for summary in summaries:
        if summary["through_seq"] and summary["through_seq"] not in positions:
            raise MemoryInputError(
                f"summary of '{summary['node']}' covers through message {summary['through_seq']}, which is not in the import"
            )
    with transaction.atomic():
        rows = history_replace(history=history, messages=messages)
        for summary in summaries:
            through = rows[positions[summary["through_seq"]]].seq if summary["through_seq"] else history.replaced_through
            Summary.objects.update_or_create(
                history=history,
                memory_node=summary["node"],
                defaults={
                    "text": storable(summary["text"]),
                    "covers_through": through,
                    "token_count": default_tokenizer().count_text(summary["text"]),
                },
            )


def summarization_record(**fields) -> Summarization:
    from observability import metrics

    metrics.summarization_recorded(status=fields["status"])
    return Summarization.objects.create(**fields)


def run_entries_discard(*, run_id: int) -> None:
    """A turn that is re-executed (its worker died) writes its entries again: drop the first try's."""
    HistoryMessage.objects.filter(run_id=run_id).delete()


def thread_memory_delete(*, workflow_id: int, thread_id: int) -> int:
    """Every history keyed by this thread (global, node and named), with its summaries, and the
    facts kept by it: the thread is being deleted. Returns how many histories went."""
    return keyed_memory_delete(workflow_ids=[workflow_id], keys=[thread_key(thread_id)])


def keyed_memory_delete(*, keys: list[str], workflow_ids: list[int] | None = None) -> int:
    """Every history (with its summaries and summarizations), fact and fact extraction kept under
    one of ``keys`` (in ``workflow_ids``, when given). Returns how many histories went."""
    scope = {"key__in": keys} | ({"workflow_id__in": workflow_ids} if workflow_ids is not None else {})
    Fact.objects.filter(**scope).delete()
    FactExtraction.objects.filter(**scope).delete()
    _, per_model = History.objects.filter(**scope).delete()
    return per_model.get(History._meta.label, 0)


def participant_memory_delete(*, participant_id: int) -> None:
    """Everything memory keeps of a participant: their histories in every workflow, their facts
    (current and superseded) and the extraction requests that held their words."""
    from memory.keys import participant_key

    keyed_memory_delete(keys=[participant_key(participant_id)])
    Fact.objects.filter(participant_id=participant_id).delete()
    FactExtraction.objects.filter(participant_id=participant_id).delete()
