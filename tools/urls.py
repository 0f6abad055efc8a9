from django.urls import path

from tools import api

urlpatterns = [
    path("secrets/", api.SecretListView.as_view()),
    path("secrets/<int:pk>/", api.SecretDetailView.as_view()),
    path("tools/mcp/", api.MCPToolsView.as_view()),
]
