"""Reads of memory stores. None of these load a whole history: costs follow what a model is sent."""

from __future__ import annotations

from .models import History, HistoryMessage, Summary

FIELDS = ("seq", "role", "content", "token_count")


def history_find(*, workflow_id: int, kind: str, name: str, key: str) -> History | None:
    # At most one (unique together); slicing skips the ORDER BY that first() would add.
    return next(iter(History.objects.filter(workflow_id=workflow_id, kind=kind, name=name, key=key)[:1]), None)


def _live(history: History, after_seq: int = 0):
    return HistoryMessage.objects.filter(history=history, seq__gt=max(after_seq, history.replaced_through))


def history_all(*, history: History, after_seq: int = 0) -> list[dict]:
    return list(_live(history, after_seq).order_by("seq").values(*FIELDS))


def history_newest(*, history: History, count: int) -> list[dict]:
    rows = list(_live(history).order_by("-seq").values(*FIELDS)[:count])
    rows.reverse()
    return rows


def history_newest_within(*, history: History, max_tokens: int, max_messages: int | None = None, batch: int = 64) -> list[dict]:
    """The newest messages whose stored token counts fit ``max_tokens`` (and ``max_messages``)."""
    kept: list[dict] = []
    total = 0
    before = None
    while True:
        query = _live(history).order_by("-seq")
        if before is not None:
            query = query.filter(seq__lt=before)
        rows = list(query.values(*FIELDS)[:batch])
        for row in rows:
            if total + row["token_count"] > max_tokens or (max_messages is not None and len(kept) >= max_messages):
                kept.reverse()
                return kept
            total += row["token_count"]
            kept.append(row)
        if len(rows) < batch:
            kept.reverse()
            return kept
        before = rows[-1]["seq"]
        batch = min(batch * 2, 1024)


def summary_for(*, history: History, memory_node: str) -> Summary | None:
    return Summary.objects.filter(history=history, memory_node=memory_node).first()


def thread_histories(*, workflow_id: int, thread_id: int) -> list[History]:
    return list(History.objects.filter(workflow_id=workflow_id, key=f"thread:{thread_id}").order_by("kind", "name"))
