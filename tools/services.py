"""Writes of secrets."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from core.errors import DomainError
from tools.models import Secret


class SecretNameTaken(DomainError):
    status = 409
    code = "secret_name_taken"
    field = "name"


def secret_create(*, owner, name: str, value: str) -> Secret:
    secret = Secret(owner=owner, name=name)
    secret.value = value
    try:
        with transaction.atomic():
            secret.save()
    except IntegrityError:
        raise SecretNameTaken(f"you already have a secret named '{name}'") from None
    return secret


def secret_update(*, secret: Secret, value: str) -> Secret:
    """A new value (the name stays: graphs refer to the secret by it)."""
    secret.value = value
    secret.save(update_fields=["value_encrypted", "updated"])
    return secret


def secret_delete(*, secret: Secret) -> None:
    """Delete a secret; the tools that name it report it missing."""
    secret.delete()
