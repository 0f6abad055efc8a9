"""Webhook calls (public, by secret URL) and the owner's trigger actions."""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from core.parsers import RawBodyParser
from observability import tracing as telemetry
from runs.api.deferred import wait_answer
from runs.api.serializers import TurnResultSerializer
from triggers import services as triggers
from triggers.models import Webhook
from workflows import selectors, versions


class WebhookAcceptedOutput(serializers.Serializer):
    """A run a webhook call started (or, with the same ``Idempotency-Key``, started before)."""

    run = serializers.IntegerField(source="pk")
    thread = serializers.IntegerField(source="thread_id", allow_null=True)
    status = serializers.CharField()


class WebhookView(APIView):
    """Fire a published workflow's webhook trigger. The message is the JSON payload's ``message``
    field, else the body as text; ``thread`` in the payload continues that conversation. Answers
    202 ``{run}``, or with ``?wait=1`` the result once the run finished (bounded wait)."""

    authentication_classes = []
    permission_classes = [AllowAny]
    parser_classes = [RawBodyParser]

    @extend_schema(
        request={"application/json": {"type": "object"}, "text/plain": {"type": "string"}},
        parameters=[
            OpenApiParameter("wait", bool, description="wait for the result (bounded)"),
            OpenApiParameter("version", int, description="run this published version (default: the live one)"),
            OpenApiParameter(versions.VERSION_HEADER, int, OpenApiParameter.HEADER, description="the same as ?version="),
            OpenApiParameter("traceparent", str, OpenApiParameter.HEADER, description="W3C trace context: the run's trace continues it"),
            OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, description="a repeated key returns the first run"),
            OpenApiParameter(triggers.TIMESTAMP_HEADER, str, OpenApiParameter.HEADER),
            OpenApiParameter(
                triggers.SIGNATURE_HEADER, str, OpenApiParameter.HEADER, description="sha256=HMAC(secret, '<timestamp>.<body>')"
            ),
        ],
        responses={202: WebhookAcceptedOutput, 200: TurnResultSerializer},
    )
    def post(self, request, token: str):
        declared = request.META.get("CONTENT_LENGTH") or "0"
        if declared.isdigit() and int(declared) > settings.SKEIN_WEBHOOK_MAX_BYTES:
            return Response({"detail": f"the body is larger than {settings.SKEIN_WEBHOOK_MAX_BYTES} bytes"}, status=413)
        try:
            body = request.body
        except RequestDataTooBig:
            return Response({"detail": "the body is too large"}, status=413)
        call = triggers.WebhookCall(
            body=body,
            content_type=request.content_type or "",
            headers=request.headers,
            idempotency_key=request.headers.get("Idempotency-Key"),
            version=request.query_params.get("version") or request.headers.get(versions.VERSION_HEADER),
            traceparent=telemetry.incoming_traceparent(request.headers),
        )
        try:
            run, created = triggers.webhook_fire(token=token, call=call)
        except triggers.WebhookRejected as rejected:
            return Response({"detail": rejected.message}, status=rejected.status)
        if request.query_params.get("wait") in ("1", "true", "yes"):
            return wait_answer(request, run, answer="hook", timeout=settings.SKEIN_WEBHOOK_WAIT_S, replayed=not created)
        headers = {} if created else {"Idempotent-Replayed": "true"}
        return Response(WebhookAcceptedOutput(run).data, status=202, headers=headers)


class WebhookRegenerateView(APIView):
    """A new secret URL and signing secret for one webhook trigger; the old ones stop working."""

    @extend_schema(request=None, responses={200: {"type": "object"}})
    def post(self, request, pk: int, node: str):
        workflow = selectors.workflow_get(owner=request.user, workflow_id=pk)
        webhook = Webhook.objects.filter(workflow=workflow, node=node).first() if workflow else None
        if webhook is None:
            raise NotFound("no published webhook trigger with that node id")
        triggers.webhook_regenerate(webhook=webhook)
        return Response(triggers.triggers_of(workflow=workflow, base_url=request.build_absolute_uri("/").rstrip("/")))
