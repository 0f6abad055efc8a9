from django.urls import path

from . import api

urlpatterns = [
    path("threads/<int:pk>/memory/", api.ThreadMemoryView.as_view()),
    path("threads/<int:pk>/memory-export/", api.ThreadMemoryExportView.as_view()),
    path("threads/<int:pk>/memory-import/", api.ThreadMemoryImportView.as_view()),
    path("threads/<int:pk>/memory/<str:name>/", api.ThreadMemoryDetailView.as_view()),
]
