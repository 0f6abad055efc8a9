"""Writes of ``memory.facts``: an extraction's changes, and the owner's edits (docs/participants.md#memoryfacts).

One current fact per key (``name``) at a time (a database constraint holds it). A changed value
supersedes the current fact: the old row stays, ``superseded`` set to when, and the new one is
current. Deleting a fact (the owner's) removes it and its superseded history.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.text import storable
from memory import facts as rules
from memory.models import Fact, FactExtraction

MAX_SOURCE_CHARS = 4000


class FactInputError(ValueError):
    """An owner's fact that cannot be stored as asked (too many, a key already in use...)."""


def _supersede_and_add(*, current: Fact | None, **fields) -> Fact:
    """``current`` (if any) superseded now; the new fact current. In one savepoint."""
    with transaction.atomic():
        now = timezone.now()
        if current is not None:
            Fact.objects.filter(pk=current.pk).update(superseded=now)
        fact = Fact.objects.create(**fields)
        if current is not None:
            Fact.objects.filter(pk=current.pk).update(superseded_by=fact)
    return fact


def facts_apply(
    *,
    workflow_id: int,
    key: str,
    participant_id: int | None,
    found: list[rules.Extracted],
    max_facts: int,
    source_message: str,
    run_id: int | None,
) -> tuple[int, int, int]:
    """Store what an extraction found: new facts (while fewer than ``max_facts`` are current) and
    changed values (superseding the old). Returns (added, updated, left out for ``max_facts``)."""
    added = updated = dropped = 0
    source_message = storable(source_message)[:MAX_SOURCE_CHARS]
    with transaction.atomic():
        current = {f.name: f for f in Fact.objects.select_for_update().filter(workflow_id=workflow_id, key=key, superseded__isnull=True)}
        count = len(current)
        for item in found:
            existing = current.get(item.name)
            if existing is not None and rules.same_value(existing.value, item.value):
                continue
            if existing is None and count >= max_facts:
                dropped += 1
                continue
            try:
                fact = _supersede_and_add(
                    current=existing,
                    workflow_id=workflow_id,
                    key=key,
                    participant_id=participant_id,
                    name=item.name,
                    value=storable(item.value),
                    source=Fact.Source.EXTRACTED,
                    source_message=source_message,
                    run_id=run_id,
                )
            except IntegrityError:  # another turn stored this key at the same moment: theirs stands
                continue
            current[item.name] = fact
            if existing is None:
                added += 1
                count += 1
            else:
                updated += 1
    return added, updated, dropped


def extraction_record(**fields) -> FactExtraction:
    return FactExtraction.objects.create(**fields)


# --- the owner's edits ------------------------------------------------------------------------------
def fact_add(*, workflow_id: int, key: str, participant_id: int | None, name: str, value: str) -> Fact:
    """An owner's fact; a current fact of the same key is superseded by it."""
    name = rules.fact_name(name)
    with transaction.atomic():
        current = Fact.objects.select_for_update().filter(workflow_id=workflow_id, key=key, superseded__isnull=True)
        existing = next((f for f in current if f.name == name), None)
        if existing is None and len(current) >= rules.MAX_FACTS:
            raise FactInputError(f"at most {rules.MAX_FACTS} current facts per participant and workflow")
        return _supersede_and_add(
            current=existing,
            workflow_id=workflow_id,
            key=key,
            participant_id=participant_id,
            name=name,
            value=storable(value),
            source=Fact.Source.OWNER,
        )


def fact_edit(*, fact: Fact, name: str | None = None, value: str | None = None) -> Fact:
    """The owner corrects a current fact in place (its source message stays: where it came from)."""
    if fact.superseded is not None:
        raise FactInputError("this fact was superseded: edit the current one")
    changes = {}
    if name is not None:
        changes["name"] = rules.fact_name(name)
    if value is not None:
        changes["value"] = storable(value)
    try:
        with transaction.atomic():
            Fact.objects.filter(pk=fact.pk).update(source=Fact.Source.OWNER, updated=timezone.now(), **changes)
    except IntegrityError:
        raise FactInputError(f"there is already a current fact '{changes.get('name')}'") from None
    fact.refresh_from_db()
    return fact


def fact_delete(*, fact: Fact) -> None:
    """The fact, and the values it superseded (the owner wants it gone, not kept as history)."""
    with transaction.atomic():
        chain, frontier = [fact.pk], [fact.pk]
        while frontier:
            frontier = list(Fact.objects.filter(superseded_by_id__in=frontier).values_list("pk", flat=True))
            chain.extend(frontier)
        Fact.objects.filter(pk__in=chain).delete()
