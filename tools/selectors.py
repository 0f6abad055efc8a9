"""Reads of secrets, scoped to their owner."""

from __future__ import annotations

from django.db.models import QuerySet

from tools.models import Secret


def secret_list(*, owner) -> QuerySet[Secret]:
    return Secret.objects.filter(owner=owner)


def secret_get(*, owner, secret_id) -> Secret | None:
    return Secret.objects.filter(owner=owner, pk=secret_id).first()


def secret_names(*, owner_id: int, names: list[str]) -> set[str]:
    """Which of ``names`` the owner has stored."""
    return set(Secret.objects.filter(owner_id=owner_id, name__in=names).values_list("name", flat=True))


def secret_values(*, owner_id: int, names: list[str]) -> dict[str, str]:
    """The owner's secrets of these names, decrypted (for a tool's request, never for an answer)."""
    return {secret.name: secret.value for secret in Secret.objects.filter(owner_id=owner_id, name__in=names)}
