"""Compact JSON text, fast: the encoders every enqueue runs several times per job.

``json.dumps(value, separators=...)`` builds a `JSONEncoder` and then a C encoder object on
every call, which costs more than encoding a small payload (a few microseconds per job, several
times per job). These are built once. They write exactly what ``json.dumps`` with the same
options writes, except that they do not look for reference cycles: callers pass data the codec
has already checked (a cycle there raises `InvalidJob` first).

A leaf module: it imports only the standard library.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _encoder
from typing import Any


def _default(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _make(*, ensure_ascii: bool, allow_nan: bool) -> Callable[[Any], str]:
    c_make_encoder = getattr(_encoder, "c_make_encoder", None)
    if c_make_encoder is None:  # no C accelerator: the plain encoder, built once all the same
        return json.JSONEncoder(
            separators=(",", ":"), ensure_ascii=ensure_ascii, allow_nan=allow_nan
        ).encode
    string = _encoder.encode_basestring_ascii if ensure_ascii else _encoder.encode_basestring
    encode_chunks = c_make_encoder(None, _default, string, None, ":", ",", False, False, allow_nan)

    def encode(value: Any) -> str:
        if isinstance(value, str):  # a bare string: the C encoder wants a container or scalar
            return string(value)
        return "".join(encode_chunks(value, 0))

    return encode


#: ``json.dumps(value, separators=(",", ":"), ensure_ascii=False)``
compact = _make(ensure_ascii=False, allow_nan=True)
#: ``json.dumps(value, separators=(",", ":"), allow_nan=False)``: ASCII only, no NaN.
compact_ascii = _make(ensure_ascii=True, allow_nan=False)
