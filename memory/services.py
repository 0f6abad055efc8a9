"""Writes to memory stores. Appends and replacements take a row lock on the history, so two
writers never allocate the same sequence number; nothing is ever deleted."""

from __future__ import annotations

from django.db import transaction

from workflows.text import storable

from .models import History, HistoryMessage, Summarization, Summary
from .tokens import count_message, count_text


def history_get_or_create(*, workflow_id: int, kind: str, name: str, key: str) -> History:
    history, _ = History.objects.get_or_create(workflow_id=workflow_id, kind=kind, name=name, key=key)
    return history


def history_append(*, history: History, messages: list[dict], run_id: int | None = None, node: str = "") -> list[HistoryMessage]:
    if not messages:
        return []
    with transaction.atomic():
        locked = History.objects.select_for_update().get(pk=history.pk)
        seq = locked.last_seq
        rows = []
        for message in messages:
            seq += 1
            rows.append(
                HistoryMessage(
                    history=locked,
                    seq=seq,
                    role=message["role"],
                    content=storable(message["content"]),
                    token_count=message.get("token_count") or count_message(message["role"], message["content"]),
                    run_id=run_id,
                    node=node,
                )
            )
        HistoryMessage.objects.bulk_create(rows)
        History.objects.filter(pk=locked.pk).update(last_seq=seq)
    history.last_seq = seq
    return rows


def history_replace(*, history: History, messages: list[dict], run_id: int | None = None, node: str = "") -> None:
    """Replace what the history holds. Old messages stay stored but leave the history; every
    summary of it is reset, since it described the old messages."""
    with transaction.atomic():
        locked = History.objects.select_for_update().get(pk=history.pk)
        History.objects.filter(pk=locked.pk).update(replaced_through=locked.last_seq)
        Summary.objects.filter(history=locked).update(text="", token_count=0, covers_through=locked.last_seq)
        history.replaced_through = locked.last_seq
        history.last_seq = locked.last_seq
        history_append(history=history, messages=messages, run_id=run_id, node=node)


def history_clear(*, history: History) -> None:
    history_replace(history=history, messages=[])


def summary_save(*, history: History, memory_node: str, text: str, previous_through: int, through_seq: int) -> bool:
    """Store a new summary, unless another writer moved the summary on meanwhile (then False)."""
    with transaction.atomic():
        summary, _ = Summary.objects.select_for_update().get_or_create(history=history, memory_node=memory_node)
        if summary.covers_through != previous_through:
            return False
        summary.text = text
        summary.covers_through = through_seq
        summary.token_count = count_text(text)
        summary.save()
    return True


def summarization_record(**fields) -> Summarization:
    from workflows import metrics

    metrics.summarization_recorded(status=fields["status"])
    return Summarization.objects.create(**fields)


def run_entries_discard(*, run_id: int) -> None:
    """A turn that is re-executed (its worker died) writes its entries again: drop the first try's."""
    HistoryMessage.objects.filter(run_id=run_id).delete()


def thread_memory_delete(*, workflow_id: int, thread_id: int) -> int:
    """Every history keyed by this thread (global, node and named), with its summaries: the
    thread is being deleted. Returns how many histories went."""
    _, per_model = History.objects.filter(workflow_id=workflow_id, key=f"thread:{thread_id}").delete()
    return per_model.get(History._meta.label, 0)
