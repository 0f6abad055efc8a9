from django.urls import path

from conversation_tests import api

urlpatterns = [
    path("workflows/<int:pk>/publish/", api.PublishView.as_view()),  # through the tests' publish gate
    path("workflows/<int:pk>/tests/", api.WorkflowTestsView.as_view()),
    path("workflows/<int:pk>/tests/run/", api.TestRunStartView.as_view()),
    path("workflows/<int:pk>/tests/import/", api.TestsImportView.as_view()),
    path("workflows/<int:pk>/tests/export/", api.TestsExportView.as_view()),
    path("workflows/<int:pk>/tests/settings/", api.TestSettingsView.as_view()),
    path("workflows/<int:pk>/test-runs/", api.WorkflowTestRunsView.as_view()),
    path("tests/<int:pk>/", api.TestDetailView.as_view()),
    path("threads/<int:pk>/save-as-test/", api.SaveAsTestView.as_view()),
    path("test-runs/<int:pk>/", api.TestRunDetailView.as_view()),
    path("test-runs/<int:pk>/compare/<int:other>/", api.TestRunCompareView.as_view()),
]
