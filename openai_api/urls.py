from django.urls import path, re_path

from openai_api import api

urlpatterns = [
    path("chat/completions", api.chat_completions),
    path("models", api.models),
    path("models/<str:model>", api.model_detail),
    re_path(r"^(?P<rest>.*)$", api.not_found),
]
