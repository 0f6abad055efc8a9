"""Every WebSocket path (docs/streaming.md), each served by its app's consumer."""

from django.urls import path, re_path

from conversation_tests.consumers import TestRunConsumer
from runs.consumers import RunConsumer, ThreadConsumer
from widget.consumers import WidgetConsumer

websocket_urlpatterns = [
    path("ws/threads/<int:thread_id>/", ThreadConsumer.as_asgi()),
    path("ws/runs/<int:run_id>/", RunConsumer.as_asgi()),
    path("ws/test-runs/<int:test_run_id>/", TestRunConsumer.as_asgi()),
    re_path(r"^ws/widget/(?P<public_key>[A-Za-z0-9_-]{1,64})/$", WidgetConsumer.as_asgi()),
]
