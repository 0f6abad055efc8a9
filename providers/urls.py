from django.urls import path

from providers import api

urlpatterns = [
    path("providers/", api.ProviderListView.as_view()),
    path("providers/<int:pk>/", api.ProviderDetailView.as_view()),
    path("providers/<int:pk>/test/", api.ProviderTestView.as_view()),
    path("providers/test/", api.ProviderDraftTestView.as_view()),
    path("providers/default/", api.ModelDefaultView.as_view()),
    path("providers/<int:pk>/models/", api.ProviderModelsView.as_view()),
]
