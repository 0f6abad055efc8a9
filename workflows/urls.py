from django.urls import path

from workflows.api import files, templates, versions, workflows

# Publishing is conversation_tests' (conversation_tests/urls.py): it goes through the tests' gate.
urlpatterns = [
    path("node-types/", workflows.NodeTypeListView.as_view()),
    path("templates/", templates.TemplateListView.as_view()),
    path("workflows/", workflows.WorkflowListView.as_view()),
    path("workflows/<int:pk>/", workflows.WorkflowDetailView.as_view()),
    path("workflows/import/", files.ImportView.as_view()),
    path("workflows/<int:pk>/versions/", versions.VersionListView.as_view()),
    path("workflows/<int:pk>/versions/diff/", versions.VersionDiffView.as_view()),
    path("workflows/<int:pk>/versions/<int:number>/restore/", versions.VersionRestoreView.as_view()),
    path("workflows/<int:pk>/export/", files.ExportView.as_view()),
]
