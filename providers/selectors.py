"""Reads of providers, scoped to their owner."""

from __future__ import annotations

from django.db.models import QuerySet

from providers.models import Provider


def provider_list(*, owner) -> QuerySet[Provider]:
    return Provider.objects.filter(owner=owner)
