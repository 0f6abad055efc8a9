from django.urls import path

from chat import api

urlpatterns = [
    path("workflows/<int:pk>/chat/", api.ChatView.as_view()),
    path("workflows/<int:pk>/chat/stream/", api.ChatStreamView.as_view()),
    path("workflows/<int:pk>/run/", api.ManualRunView.as_view()),
]
