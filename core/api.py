"""What every app's API shares: the lookup-or-404, a filtered page of a list, text that must be a string."""

from __future__ import annotations

from typing import TypeVar

from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.pagination import LimitOffsetPagination

T = TypeVar("T")


def found_or_404(found: T | None, what: str) -> T:
    """An object its owner asked for, or a 404 naming what is missing (another owner's object is
    missing too): every lookup of the API goes through it, on top of the selectors."""
    if found is None:
        raise NotFound(f"no such {what}")
    return found


def filtered_page(view, request, *, query_class, select, output_class):
    """A list view's answer: query parameters checked by ``query_class``, the rows ``select(**them)``
    returns, one page of them (``limit``, ``offset``) through ``output_class``."""
    query = query_class(data=request.query_params)
    query.is_valid(raise_exception=True)
    paginator = LimitOffsetPagination()
    page = paginator.paginate_queryset(select(owner=request.user, **query.validated_data), request, view=view)
    return paginator.get_paginated_response(output_class(page, many=True).data)


class StrictTextField(serializers.CharField):
    """Text that must arrive as a JSON string (DRF's CharField would take 42 and make it "42")."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError(f"must be a string, not {type(data).__name__}")
        return super().to_internal_value(data)
