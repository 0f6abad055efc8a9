"""Errors are JSON with a clear message; bad input is a 4xx, never a 500."""

from __future__ import annotations

import logging

import kombu.exceptions
import redis
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from engine.graph import GraphShapeError

logger = logging.getLogger("skein.api")

# A backing service that is down or was just restarted (the database, Redis as broker or cache):
# the client may retry, so say so, in JSON, rather than answer a bare 500.
UNAVAILABLE = {
    OperationalError: "the database",
    InterfaceError: "the database",
    redis.exceptions.ConnectionError: "Redis",
    redis.exceptions.TimeoutError: "Redis",
    kombu.exceptions.OperationalError: "the task queue",
}


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "conflict"


class DomainError(Exception):
    """A domain rule refused what was asked, in words the caller should read. Every app's errors
    that may reach the API derive from it and say how they are answered (``status``, ``body``), so
    the error handler needs to know none of them."""

    status = 400
    code: str | None = None  # stable, for programs
    field: str | None = None  # the input field at fault, answered as a field error too (DRF's shape)

    def __init__(self, message: str = "", *, code: str | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def body(self) -> dict:
        body = {"detail": self.message}
        if self.code:
            body["code"] = self.code
        if self.field:
            body[self.field] = [self.message]
        return body


def exception_handler(exc, context):
    if isinstance(exc, DomainError):
        return Response(exc.body(), status=exc.status)
    if isinstance(exc, GraphShapeError):
        return Response({"detail": str(exc), "errors": [{"node": None, "field": "graph", "message": str(exc)}]}, status=400)
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response({"detail": f"the body is larger than {limit} bytes"}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    unavailable = unavailable_answer(exc)
    if unavailable is not None:
        body, headers = unavailable
        return Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE, headers=headers)
    return drf_exception_handler(exc, context)


def unavailable_answer(exc) -> tuple[dict, dict] | None:
    """The 503's body and headers when ``exc`` says a backing service is down, else None."""
    for kind, service in UNAVAILABLE.items():
        if isinstance(exc, kind):
            logger.warning("%s is unavailable: %s: %s", service, type(exc).__name__, exc)
            return {"detail": f"{service} is unavailable right now; try again in a moment", "code": "unavailable"}, {"Retry-After": "5"}
    return None
