from django.urls import path, re_path

from . import consumers
from .conversation_tests.consumers import TestRunConsumer

websocket_urlpatterns = [
    path("ws/threads/<int:thread_id>/", consumers.ThreadConsumer.as_asgi()),
    path("ws/runs/<int:run_id>/", consumers.RunConsumer.as_asgi()),
    path("ws/test-runs/<int:test_run_id>/", TestRunConsumer.as_asgi()),
    re_path(r"^ws/widget/(?P<public_key>[A-Za-z0-9_-]{1,64})/$", consumers.WidgetConsumer.as_asgi()),
]
