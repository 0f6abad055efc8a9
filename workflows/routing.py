from django.urls import path

from . import consumers

websocket_urlpatterns = [
    path("ws/threads/<int:thread_id>/", consumers.ThreadConsumer.as_asgi()),
]
