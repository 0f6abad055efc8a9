from django.urls import path

from participants import api

urlpatterns = [
    path("participants/", api.ParticipantListView.as_view()),
    path("participants/<int:pk>/", api.ParticipantDetailView.as_view()),
    path("participants/<int:pk>/facts/", api.ParticipantFactsView.as_view()),
    path("facts/<int:pk>/", api.FactDetailView.as_view()),
]
