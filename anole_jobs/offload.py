"""Offload of large args and results to a Django storage (docs/offload.md).

With ``ANOLE_JOBS["OFFLOAD"] = {"storage": "default", "over": 65536}``, args or a result whose
JSON text is over `over` bytes are written to that storage (``django.core.files.storage``'s
``storages[alias]``) and the job holds a reference in their place:
``{"__anole_offload__": {"storage": alias, "name": path, "bytes": n}}``. Claims read only the
reference; the service opens it for handlers, `jobs.get`, `jobs.result` and the surfaces; the
file is deleted with its job (`jobs.delete`, bulk deletes, the leader's prune).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger("anole_jobs.offload")

#: The one key of a reference.
REF = "__anole_offload__"
#: Where the files go in the storage.
FOLDER = "anole_jobs/payloads"
#: The most MAX_PAYLOAD_BYTES may be without offload, and with it.
INLINE_PAYLOAD_MAX = 16 * 1024 * 1024
OFFLOAD_PAYLOAD_MAX = 100 * 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class Offload:
    """The `OFFLOAD` setting: the storage alias, and the size in bytes above which a value is
    kept there."""

    storage: str = "default"
    over: int = 65536


def is_ref(value: object) -> bool:
    """Whether `value` is a reference to an offloaded value."""
    if not (type(value) is dict or isinstance(value, Mapping)) or len(value) != 1:
        return False  # (a dict first: the ABC's check costs more, on every job)
    inner = value.get(REF)
    return isinstance(inner, Mapping) and isinstance(inner.get("name"), str)


def _storage(alias: str) -> Any:
    from django.core.files.storage import storages

    return storages[alias]


def put(text: str, config: Offload) -> dict[str, Any]:
    """Write JSON text `text` to the storage; its reference."""
    from django.core.files.base import ContentFile

    data = text.encode()
    name = _storage(config.storage).save(f"{FOLDER}/{uuid.uuid4().hex}.json", ContentFile(data))
    return {REF: {"storage": config.storage, "name": name, "bytes": len(data)}}


def maybe_put(text: str, config: Offload | None) -> str | None:
    """The reference's JSON text when `text` is over the limit (None: keep it inline)."""
    if config is None or len(text.encode()) <= config.over:
        return None
    return json.dumps(put(text, config), separators=(",", ":"))


def load(ref: Mapping[str, Any]) -> Any:
    """The JSON value a reference names."""
    inner = ref[REF]
    with _storage(str(inner.get("storage", "default"))).open(str(inner["name"]), "rb") as f:
        return json.loads(f.read())


def inline(value: Any) -> Any:
    """`value`, or the value it refers to."""
    return load(value) if is_ref(value) else value


def refs(*values: Any) -> Iterator[Mapping[str, Any]]:
    """The references among `values`."""
    for value in values:
        if is_ref(value):
            yield value


def delete(ref: Mapping[str, Any]) -> None:
    """Delete the file a reference names (a missing one is fine; a failure is logged)."""
    inner = ref[REF]
    try:
        _storage(str(inner.get("storage", "default"))).delete(str(inner["name"]))
    except Exception:  # noqa: BLE001 - a file left behind must not fail a delete or a prune
        logger.warning("could not delete the offloaded payload %s", inner.get("name"))
