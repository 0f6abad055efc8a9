from django.urls import path

from runs.api import limits, memory, runs, threads

urlpatterns = [
    path("runs/", runs.RunListView.as_view()),
    path("runs/<int:pk>/", runs.RunDetailView.as_view()),
    path("threads/", threads.ThreadListView.as_view()),
    path("threads/<int:pk>/", threads.ThreadDetailView.as_view()),
    path("threads/<int:pk>/messages/", threads.ThreadMessagesView.as_view()),
    path("threads/<int:pk>/memory/", memory.ThreadMemoryView.as_view()),
    path("threads/<int:pk>/memory-export/", memory.ThreadMemoryExportView.as_view()),
    path("threads/<int:pk>/memory-import/", memory.ThreadMemoryImportView.as_view()),
    path("threads/<int:pk>/memory/<str:name>/", memory.ThreadMemoryDetailView.as_view()),
    path("workflows/<int:pk>/limits/", limits.LimitsView.as_view()),
]
