"""The embeddable widget over HTTP: the owner's settings, the public config, and the script.

- ``GET/PATCH /api/workflows/{id}/widget/``: public key, allowed origins, theme defaults, the
  embed snippet (owner only);
- ``POST /api/workflows/{id}/widget/``: rotate the public key (pages with the old one stop working);
- ``GET /api/widget/{public_key}/``: what the widget loads before it connects (anonymous, CORS);
- ``GET /widget.js``: the widget script (routed in config/urls.py).
"""

from __future__ import annotations

from django.conf import settings
from django.http import FileResponse, HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from core.origins import origin_allowed, origin_normalize
from participants import services as participants
from widget import selectors as widget_selectors
from widget import services as widget
from workflows.lookups import workflow_or_404

WIDGET_SCRIPT = settings.BASE_DIR / "frontend" / "widget" / "dist" / "skein-widget.js"


class ThemeSerializer(serializers.Serializer):
    title = serializers.CharField(required=False, allow_blank=True, max_length=80)
    welcome = serializers.CharField(required=False, allow_blank=True, max_length=1000)
    placeholder = serializers.CharField(required=False, allow_blank=True, max_length=120)
    color = serializers.CharField(required=False, allow_blank=True, max_length=40, help_text="accent colour (CSS)")
    text_color = serializers.CharField(required=False, allow_blank=True, max_length=40, help_text="text on the accent colour")
    background = serializers.CharField(required=False, allow_blank=True, max_length=40)
    position = serializers.ChoiceField(choices=["left", "right"], required=False)
    starters = serializers.ListField(child=serializers.CharField(max_length=200), required=False, max_length=widget.MAX_STARTERS)


class WidgetSettingsOutput(serializers.Serializer):
    public_key = serializers.CharField()
    published = serializers.BooleanField(help_text="the widget works once the workflow is published")
    allowed_origins = serializers.ListField(child=serializers.CharField(), help_text="empty: any site may embed it")
    theme = ThemeSerializer()
    script_url = serializers.CharField()
    embed_snippet = serializers.CharField()
    identity_secret = serializers.CharField(
        help_text="sign a logged-in user's id with it on your server: data-participant-signature = hex HMAC-SHA256(id, secret)"
    )


class WidgetSettingsInput(serializers.Serializer):
    allowed_origins = serializers.ListField(
        child=serializers.CharField(max_length=300),
        required=False,
        max_length=100,
        help_text="scheme://host[:port] each; https://*.example.com allows its subdomains; [] allows any site",
    )
    theme = ThemeSerializer(required=False)

    def validate_allowed_origins(self, value):
        try:
            return [origin_normalize(origin) for origin in value]
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None


class WidgetRotateInput(serializers.Serializer):
    rotate = serializers.ChoiceField(choices=["public_key", "identity_secret"], default="public_key")


def settings_data(request, workflow) -> dict:
    script_url = request.build_absolute_uri("/widget.js")
    return WidgetSettingsOutput(
        {
            "public_key": workflow.public_key,
            "published": workflow.published_version_id is not None,
            "allowed_origins": workflow.allowed_origins or [],
            "theme": workflow.widget_theme or {},
            "script_url": script_url,
            "embed_snippet": f'<script src="{script_url}" data-key="{workflow.public_key}" async></script>',
            "identity_secret": participants.identity_secret(workflow=workflow),
        }
    ).data


class WidgetSettingsView(APIView):
    """The workflow's chat widget: key, allowed origins, theme defaults and embed snippet."""

    @extend_schema(responses={200: WidgetSettingsOutput})
    def get(self, request, pk: int):
        return Response(settings_data(request, workflow_or_404(request, pk)))

    @extend_schema(request=WidgetSettingsInput, responses={200: WidgetSettingsOutput})
    def patch(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        data = WidgetSettingsInput(data=request.data)
        data.is_valid(raise_exception=True)
        widget.widget_settings_update(
            workflow=workflow, allowed_origins=data.validated_data.get("allowed_origins"), theme=data.validated_data.get("theme")
        )
        return Response(settings_data(request, workflow))

    @extend_schema(
        request=WidgetRotateInput,
        responses={201: WidgetSettingsOutput},
        description='Rotate the public key, or (`{"rotate": "identity_secret"}`) the identity secret.',
    )
    def post(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        data = WidgetRotateInput(data=request.data or {})
        data.is_valid(raise_exception=True)
        if data.validated_data["rotate"] == "identity_secret":
            participants.identity_secret_rotate(workflow=workflow)
        else:
            workflow = widget.widget_key_rotate(workflow=workflow)
        return Response(settings_data(request, workflow), status=status.HTTP_201_CREATED)


class WidgetConfigOutput(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    theme = ThemeSerializer()


class WidgetPublicConfigView(APIView):
    """What the widget loads before it connects. Anonymous; readable from any page (CORS), so a
    refused page can show why; the WebSocket enforces the allowed origins."""

    permission_classes = [AllowAny]
    authentication_classes = []

    @extend_schema(
        responses={
            200: WidgetConfigOutput,
            403: OpenApiResponse(description="this page's origin may not embed the widget"),
            404: OpenApiResponse(description="unknown key"),
            409: OpenApiResponse(description="not published yet"),
        }
    )
    def get(self, request, public_key: str):
        workflow = widget_selectors.workflow_by_key(public_key=public_key)
        if workflow is None:
            body, code = {"code": "unknown_key", "detail": "This chat widget does not exist (check data-key)."}, 404
        elif not origin_allowed(workflow=workflow, origin=request.headers.get("Origin")):
            body, code = {"code": "origin_not_allowed", "detail": "This site is not allowed to use this chat widget."}, 403
        elif workflow.published_version_id is None:
            body, code = {"code": "not_published", "detail": "This chatbot is not published yet."}, 409
        else:
            body, code = WidgetConfigOutput(widget_selectors.widget_config(workflow=workflow)).data, 200
        response = Response(body, status=code)
        response["Access-Control-Allow-Origin"] = request.headers.get("Origin") or "*"
        response["Vary"] = "Origin"
        response["Cache-Control"] = "no-store"
        return response


def widget_script(request):
    """The widget (frontend/widget, built to one file)."""
    if not WIDGET_SCRIPT.exists():
        return HttpResponse(
            'console.error("Skein: the chat widget is not built (cd frontend/widget && npm ci && npm run build)");',
            content_type="text/javascript",
            status=503,
        )
    # The script holds non-ASCII text (icons, "…"): a page in another charset must still read it as UTF-8.
    response = FileResponse(open(WIDGET_SCRIPT, "rb"), content_type="text/javascript; charset=utf-8")
    response["Cache-Control"] = "public, max-age=300"
    response["Access-Control-Allow-Origin"] = "*"
    return response
