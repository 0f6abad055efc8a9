"""Logging in and out (session or API token), the current user, the password, the CSRF cookie."""

from django.contrib.auth import authenticate, login, logout
from django.middleware.csrf import get_token
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_protect
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import Throttled
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import auth as accounts


class CredentialsSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=200, trim_whitespace=False)


class UserSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()


class TokenOutput(serializers.Serializer):
    token = serializers.CharField(source="key", help_text="send it as `Authorization: Token <token>`")


class CsrfOutput(serializers.Serializer):
    csrftoken = serializers.CharField()


class TooManyLogins(Throttled):
    default_detail = "too many failed logins; try again later"


def _authenticate(request):
    """Check a username and password; after repeated failures (of this client on this account, of
    this client, or on this account from anywhere, counted by ``accounts.LockoutBackend``) further
    attempts answer 429 for a while, right or wrong."""
    data = CredentialsSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    if accounts.login_locked(request, data.validated_data["username"]):
        raise TooManyLogins(wait=accounts.LOGIN_LOCKOUT_S)
    user = authenticate(request, **data.validated_data)
    if user is None:
        raise serializers.ValidationError({"detail": "wrong username or password"})
    return user


class TokenView(APIView):
    """Exchange a username and password for an API token (``Authorization: Token <key>``). Logging
    out and changing the password revoke it; with ``SKEIN_TOKEN_TTL_HOURS`` it also expires."""

    permission_classes = [AllowAny]
    authentication_classes = []

    @extend_schema(request=CredentialsSerializer, responses={200: TokenOutput})
    def post(self, request):
        return Response(TokenOutput(accounts.token_for(user=_authenticate(request))).data)


@method_decorator(csrf_protect, name="dispatch")  # login CSRF: a page must not log a visitor in as someone else
class LoginView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(request=CredentialsSerializer, responses={200: UserSerializer})
    def post(self, request):
        user = _authenticate(request)
        login(request, user)
        return Response(UserSerializer(user).data)


class LogoutView(APIView):
    """End the session and revoke the caller's API token (a new one comes from POST /api/auth/token/)."""

    @extend_schema(request=None, responses={204: None})
    def post(self, request):
        if request.user.is_authenticated:
            accounts.tokens_revoke(user=request.user)
        logout(request)
        return Response(status=204)


class PasswordChangeInput(serializers.Serializer):
    old_password = serializers.CharField(max_length=200, trim_whitespace=False)
    new_password = serializers.CharField(max_length=200, trim_whitespace=False)


class PasswordChangeView(APIView):
    """Change the caller's password. Every API token of theirs is revoked and their other sessions
    end; this session goes on."""

    @extend_schema(request=PasswordChangeInput, responses={204: None})
    def post(self, request):
        data = PasswordChangeInput(data=request.data)
        data.is_valid(raise_exception=True)
        if accounts.login_locked(request, request.user.get_username()):
            raise TooManyLogins(wait=accounts.LOGIN_LOCKOUT_S)
        try:
            accounts.password_change(request=request, user=request.user, **data.validated_data)
        except accounts.PasswordRefused as refused:
            raise serializers.ValidationError({refused.field: refused.messages}) from None
        return Response(status=204)


class MeView(APIView):
    @extend_schema(responses={200: UserSerializer})
    def get(self, request):
        return Response(UserSerializer(request.user).data)


class CsrfView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(responses={200: CsrfOutput})
    def get(self, request):
        return Response({"csrftoken": get_token(request)})
