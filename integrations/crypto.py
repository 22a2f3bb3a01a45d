"""Encryption at rest for provider secrets (Fernet, AES-128-CBC + HMAC-SHA256).

Key: `PAYPILOT_SECRETS_KEY` (one Fernet key, or several comma-separated for rotation: the
first encrypts, all decrypt). When it is unset the key is derived from `SECRET_KEY`, so a
fresh clone works; production should set its own key so rotating `SECRET_KEY` does not
make stored secrets unreadable.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


class SecretUnreadable(Exception):
    """A stored secret cannot be decrypted with the configured key(s)."""


@lru_cache(maxsize=4)
def _fernet(key_material: str, secret_key: str) -> MultiFernet:
    keys = [k.strip() for k in key_material.split(",") if k.strip()]
    if not keys:
        derived = hashlib.sha256(b"paypilot.integrations.secrets:" + secret_key.encode()).digest()
        keys = [base64.urlsafe_b64encode(derived).decode()]
    return MultiFernet([Fernet(k.encode()) for k in keys])


def _current() -> MultiFernet:
    return _fernet(settings.PAYPILOT_SECRETS_KEY, settings.SECRET_KEY)


def secret_encrypt(plaintext: str) -> str:
    """Fernet token for `plaintext`; an empty value stays empty (nothing configured)."""
    if not plaintext:
        return ""
    return _current().encrypt(plaintext.encode()).decode()


def secret_decrypt(token: str) -> str:
    """Plaintext of a stored token ("" for ""); raises SecretUnreadable on a wrong key."""
    if not token:
        return ""
    try:
        return _current().decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise SecretUnreadable("stored secret cannot be decrypted with PAYPILOT_SECRETS_KEY") from exc
