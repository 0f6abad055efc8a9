"""Provider secrets at rest: Fernet, keyed by SKEIN_ENCRYPTION_KEY (or derived from SECRET_KEY)."""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


@lru_cache(maxsize=4)
def _fernet(key_material: str) -> Fernet:
    try:
        return Fernet(key_material.encode())
    except ValueError:
        # Any passphrase works: derive a proper 32-byte key from it.
        digest = hashlib.sha256(key_material.encode()).digest()
        return Fernet(base64.urlsafe_b64encode(digest))


def _current() -> Fernet:
    return _fernet(settings.SKEIN_ENCRYPTION_KEY or f"skein:{settings.SECRET_KEY}")


def encrypt(plaintext: str) -> str:
    return _current().encrypt(plaintext.encode()).decode() if plaintext else ""


def decrypt(ciphertext: str) -> str:
    if not ciphertext:
        return ""
    try:
        return _current().decrypt(ciphertext.encode()).decode()
    except InvalidToken:
        raise ValueError("the provider key cannot be decrypted: was SKEIN_ENCRYPTION_KEY changed?") from None
