from django.urls import path

from widget import api

urlpatterns = [
    path("workflows/<int:pk>/widget/", api.WidgetSettingsView.as_view()),
    path("widget/<str:public_key>/", api.WidgetPublicConfigView.as_view()),
]
