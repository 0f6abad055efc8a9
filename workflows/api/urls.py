from django.urls import path

from . import auth, hooks, provider_models, providers, runs, stream, threads, widget, workflows

urlpatterns = [
    path("auth/token/", auth.TokenView.as_view()),
    path("auth/login/", auth.LoginView.as_view()),
    path("auth/logout/", auth.LogoutView.as_view()),
    path("auth/me/", auth.MeView.as_view()),
    path("auth/csrf/", auth.CsrfView.as_view()),
    path("node-types/", workflows.NodeTypeListView.as_view()),
    path("providers/", providers.ProviderListView.as_view()),
    path("providers/<int:pk>/", providers.ProviderDetailView.as_view()),
    path("providers/<int:pk>/test/", providers.ProviderTestView.as_view()),
    path("providers/test/", providers.ProviderDraftTestView.as_view()),
    path("providers/default/", provider_models.ModelDefaultView.as_view()),
    path("providers/<int:pk>/models/", provider_models.ProviderModelsView.as_view()),
    path("workflows/", workflows.WorkflowListView.as_view()),
    path("workflows/<int:pk>/", workflows.WorkflowDetailView.as_view()),
    path("workflows/<int:pk>/publish/", workflows.PublishView.as_view()),
    path("workflows/<int:pk>/chat/", workflows.ChatView.as_view()),
    path("workflows/<int:pk>/chat/stream/", stream.ChatStreamView.as_view()),
    path("workflows/<int:pk>/widget/", widget.WidgetSettingsView.as_view()),
    path("widget/<str:public_key>/", widget.WidgetPublicConfigView.as_view()),
    path("workflows/<int:pk>/run/", workflows.ManualRunView.as_view()),
    path("workflows/<int:pk>/webhooks/<str:node>/regenerate/", hooks.WebhookRegenerateView.as_view()),
    path("hooks/<str:token>/", hooks.WebhookView.as_view()),
    path("runs/", runs.RunListView.as_view()),
    path("runs/<int:pk>/", runs.RunDetailView.as_view()),
    path("threads/<int:pk>/messages/", threads.ThreadMessagesView.as_view()),
]
