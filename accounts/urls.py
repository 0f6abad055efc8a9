from django.urls import path

from accounts import api

urlpatterns = [
    path("auth/token/", api.TokenView.as_view()),
    path("auth/login/", api.LoginView.as_view()),
    path("auth/logout/", api.LogoutView.as_view()),
    path("auth/me/", api.MeView.as_view()),
    path("auth/password/", api.PasswordChangeView.as_view()),
    path("auth/csrf/", api.CsrfView.as_view()),
]
