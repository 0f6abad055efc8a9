from django.urls import path

from triggers import api

urlpatterns = [
    path("workflows/<int:pk>/webhooks/<str:node>/regenerate/", api.WebhookRegenerateView.as_view()),
    path("hooks/<str:token>/", api.WebhookView.as_view()),
]
