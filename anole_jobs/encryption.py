"""Encryption at rest for the args and result of kinds declared with ``encrypt=True``
(docs/encryption.md).

A value is stored sealed: ``{"encrypted": true, "token": "<Fernet token>"}``, the token being
the value's compact JSON encrypted with the newest of `ENCRYPTION_KEYS` (Fernet, from the
`cryptography` package). Any of the keys opens it (`MultiFernet`), so a job sealed with an
older key still runs after a rotation; `jobs reencrypt` seals every stored one again with the
newest. Operators' surfaces show a sealed value as `SHOWN`, whether or not their process has
the keys.

Leaf: imports nothing of the project but `jsontext`.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from anole_jobs.jsontext import compact

#: The key a sealed value is recognised by, and the one that holds its token.
MARK, TOKEN = "encrypted", "token"
#: What every operator surface shows in place of a sealed value.
SHOWN: dict[str, Any] = {MARK: True}
INSTALL_HINT = "pip install 'anole-jobs[encryption]' (the cryptography package)"


class EncryptionError(Exception):
    """A sealed value that none of the keys opens, or no keys where some are needed."""


def available() -> bool:
    """Whether `cryptography` can be imported."""
    try:
        import cryptography.fernet  # noqa: F401
    except ImportError:
        return False
    return True


def key_problem(key: object) -> str | None:
    """Why `key` is no Fernet key (url-safe base64 of 32 bytes), or None."""
    if isinstance(key, bytes):
        key = key.decode("ascii", "replace")
    if not isinstance(key, str):
        return f"must be a str (a Fernet key), got {type(key).__name__}"
    try:
        raw = base64.urlsafe_b64decode(key.encode("ascii"))
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return "is not url-safe base64 (make one with Fernet.generate_key())"
    if len(raw) != 32:
        return f"must decode to 32 bytes, got {len(raw)} (make one with Fernet.generate_key())"
    return None


def is_sealed(value: object) -> bool:
    """Whether `value` is a sealed value as stored."""
    return (
        (type(value) is dict or isinstance(value, Mapping))  # a dict first: the ABC costs more
        and len(value) == 2
        and value.get(MARK) is True
        and isinstance(value.get(TOKEN), str)
    )


def shown(value: Any) -> Any:
    """`value` as an operator surface shows it: `SHOWN` for a sealed one."""
    return dict(SHOWN) if is_sealed(value) else value


@functools.lru_cache(maxsize=8)
def _fernet(keys: tuple[str, ...]) -> Any:
    if not keys:
        raise EncryptionError(
            "a kind declared with encrypt=True needs ANOLE_JOBS['ENCRYPTION_KEYS']"
        )
    try:
        from cryptography.fernet import Fernet, MultiFernet
    except ImportError:
        raise EncryptionError(f"encrypt=True needs cryptography: {INSTALL_HINT}") from None
    return MultiFernet([Fernet(key) for key in keys])


def seal_text(text: str, keys: Sequence[str]) -> dict[str, Any]:
    """JSON text `text`, sealed with the newest of `keys`."""
    token = _fernet(tuple(keys)).encrypt(text.encode()).decode("ascii")
    return {MARK: True, TOKEN: token}


def seal(value: Any, keys: Sequence[str]) -> dict[str, Any]:
    """A JSON value, sealed with the newest of `keys`."""
    return seal_text(compact(value), keys)


def _with_keys(value: Mapping[str, Any], keys: Sequence[str], action: str) -> bytes:
    """`MultiFernet.<action>` (decrypt or rotate) of the token of `value`;
    `EncryptionError` when no key opens it."""
    from cryptography.fernet import InvalidToken

    try:
        out: bytes = getattr(_fernet(tuple(keys)), action)(str(value[TOKEN]).encode("ascii"))
    except InvalidToken:
        raise EncryptionError(
            "none of ENCRYPTION_KEYS opens this value (was its key removed?)"
        ) from None
    return out


def open_sealed(value: Mapping[str, Any], keys: Sequence[str]) -> Any:
    """The JSON value `value` seals; `EncryptionError` when no key opens it."""
    return json.loads(_with_keys(value, keys, "decrypt"))


def reseal(value: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """`value` sealed again with the newest of `keys` (`MultiFernet.rotate`);
    `EncryptionError` when no key opens it."""
    return {MARK: True, TOKEN: _with_keys(value, keys, "rotate").decode("ascii")}
