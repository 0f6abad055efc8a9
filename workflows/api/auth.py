from django.contrib.auth import authenticate, login, logout
from django.core.cache import cache
from django.middleware.csrf import get_token
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_protect
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import Throttled
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView


class CredentialsSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=200, trim_whitespace=False)


class UserSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()


LOGIN_FAILURES_ALLOWED = 10
LOGIN_LOCKOUT_S = 15 * 60


class TooManyLogins(Throttled):
    default_detail = "too many failed logins; try again later"


def _failure_keys(request, username: str) -> list[str]:
    client = request.META.get("REMOTE_ADDR", "unknown")
    return [f"skein:login-fail:user:{username.lower()}", f"skein:login-fail:ip:{client}"]


def _authenticate(request):
    """Check a username and password; after repeated failures (per account and per client
    address) further attempts answer 429 for a while, right or wrong."""
    data = CredentialsSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    keys = _failure_keys(request, data.validated_data["username"])
    if any((cache.get(key) or 0) >= LOGIN_FAILURES_ALLOWED for key in keys):
        raise TooManyLogins(wait=LOGIN_LOCKOUT_S)
    user = authenticate(request, **data.validated_data)
    if user is None:
        for key in keys:
            cache.add(key, 0, timeout=LOGIN_LOCKOUT_S)
            cache.incr(key)
        raise serializers.ValidationError({"detail": "wrong username or password"})
    return user


class TokenView(APIView):
    """Exchange a username and password for an API token (``Authorization: Token <key>``)."""

    permission_classes = [AllowAny]
    authentication_classes = []

    @extend_schema(request=CredentialsSerializer, responses={200: {"type": "object", "properties": {"token": {"type": "string"}}}})
    def post(self, request):
        token, _ = Token.objects.get_or_create(user=_authenticate(request))
        return Response({"token": token.key})


@method_decorator(csrf_protect, name="dispatch")  # login CSRF: a page must not log a visitor in as someone else
class LoginView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(request=CredentialsSerializer, responses={200: UserSerializer})
    def post(self, request):
        user = _authenticate(request)
        login(request, user)
        return Response({"id": user.pk, "username": user.username})


class LogoutView(APIView):
    @extend_schema(request=None, responses={204: None})
    def post(self, request):
        logout(request)
        return Response(status=204)


class MeView(APIView):
    @extend_schema(responses={200: UserSerializer})
    def get(self, request):
        return Response({"id": request.user.pk, "username": request.user.username})


class CsrfView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(responses={200: {"type": "object", "properties": {"csrftoken": {"type": "string"}}}})
    def get(self, request):
        return Response({"csrftoken": get_token(request)})
