"""Logging in, API tokens and passwords: one lockout for every way in (API, session, admin).

- ``LockoutBackend`` (``AUTHENTICATION_BACKENDS``): ten failures of one client address on one
  account lock that pair for 15 minutes, right password or not; 30 of one client on any accounts
  lock the client, and 100 on one account from anywhere lock the account. Every
  ``authenticate()`` goes through it, so the admin's login form is locked out exactly like
  ``POST /api/auth/token/``.
- API tokens are rotated on logout and on a password change, and expire after
  ``SKEIN_TOKEN_TTL_HOURS`` when that is set; ``token_user`` is the one check of a token, for every
  surface that takes one.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.password_validation import validate_password
from django.core.cache import cache
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed

from core.clientaddr import request_client

LOGIN_LOCKOUT_S = 15 * 60
# Failures within LOGIN_LOCKOUT_S that lock, counted per scope. One client on one account is
# locked soon; one client trying many accounts (spraying) a little later; an account only after
# many failures from many clients (a distributed guess), so no one client can lock its owner out.
LOGIN_FAILURES_ALLOWED = {"pair": 10, "client": 30, "user": 100}


def _failure_keys(request, username: str) -> dict[str, str]:
    client = request_client(request) if request is not None else "unknown"
    # A digest: any text a visitor types as a user name makes a valid, bounded cache key.
    user = hashlib.sha256((username or "").lower().encode()).hexdigest()[:32]
    return {
        "pair": f"skein:login-fail:pair:{user}:{client}",
        "client": f"skein:login-fail:ip:{client}",
        "user": f"skein:login-fail:user:{user}",
    }


def login_locked(request, username: str) -> bool:
    """Whether this client may not try to log in as ``username`` now (right password or not)."""
    return any((cache.get(key) or 0) >= LOGIN_FAILURES_ALLOWED[scope] for scope, key in _failure_keys(request, username).items())


def login_failed(request, username: str) -> None:
    for key in _failure_keys(request, username).values():
        cache.add(key, 0, timeout=LOGIN_LOCKOUT_S)
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout=LOGIN_LOCKOUT_S)


class LockoutBackend(ModelBackend):
    """Django's model backend behind the login lockout."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None:
            username = kwargs.get(self._username_field(), "")
        if login_locked(request, username or ""):
            raise PermissionDenied("too many failed logins")  # ends authenticate(): no other backend
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            login_failed(request, username or "")
        return user

    @staticmethod
    def _username_field() -> str:
        from django.contrib.auth import get_user_model

        return get_user_model().USERNAME_FIELD


# --- API tokens -----------------------------------------------------------------------------------
def token_expired(token: Token) -> bool:
    hours = settings.SKEIN_TOKEN_TTL_HOURS
    return bool(hours) and token.created < timezone.now() - timedelta(hours=hours)


def token_for(*, user) -> Token:
    """The user's API token; a new one when the old one expired."""
    token = Token.objects.filter(user=user).first()
    if token is not None and token_expired(token):
        token.delete()
        token = None
    return token or Token.objects.create(user=user)


def tokens_revoke(*, user) -> None:
    Token.objects.filter(user=user).delete()


class TokenRefused(Exception):
    """An API token that lets no one in: ``reason`` is ``invalid`` or ``expired``."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def token_user(key: str):
    """The active user whose API token is ``key``, and the token: the one check of every surface
    that takes API tokens (the API's ``Authorization: Token``, ``/v1``'s ``Authorization: Bearer``).
    Raises ``TokenRefused`` for an unknown, inactive or expired one."""
    token = Token.objects.select_related("user").filter(key=key).first() if 0 < len(key) <= 40 else None
    if token is None or not token.user.is_active:
        raise TokenRefused("invalid", "invalid API token: get one from POST /api/auth/token/")
    if token_expired(token):
        raise TokenRefused("expired", "the API token expired: get a new one from POST /api/auth/token/")
    return token.user, token


class ExpiringTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>``, checked by ``token_user`` (an expired token is refused)."""

    def authenticate_credentials(self, key):
        try:
            return token_user(key)
        except TokenRefused as exc:
            raise AuthenticationFailed(str(exc)) from None


# --- passwords ------------------------------------------------------------------------------------
class PasswordRefused(Exception):
    def __init__(self, field: str, messages: list[str]):
        super().__init__("; ".join(messages))
        self.field = field
        self.messages = messages


def password_change(*, request, user, old_password: str, new_password: str) -> None:
    """Set a new password after checking the current one (through the lockout). Every API token of
    the user is revoked and every other session of theirs ends; the caller's session goes on."""
    from django.contrib.auth import authenticate, update_session_auth_hash

    if authenticate(request, username=user.get_username(), password=old_password) is None:
        raise PasswordRefused("old_password", ["the current password is wrong"])
    try:
        validate_password(new_password, user)
    except ValidationError as exc:
        raise PasswordRefused("new_password", list(exc.messages)) from None
    user.set_password(new_password)
    user.save(update_fields=["password"])
    tokens_revoke(user=user)
    if hasattr(request, "session"):
        update_session_auth_hash(request, user)
