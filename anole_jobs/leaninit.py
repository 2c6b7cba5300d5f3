"""A cheaper ``__init__`` for the frozen dataclasses every job makes a few of (its record, its
claim, its finish): the one `dataclasses` writes calls ``object.__setattr__`` once per field
(a frozen class refuses plain assignment), which made these records a large part of the
runtime's own work per job once they grew their newer fields. `lean_init` replaces it with
one that fills the instance's ``__dict__`` in a single call: the same parameters, defaults
and default factories, so the class behaves as before (equality, hashing, `replace`, repr,
and assignment still refused).

Leaf module: it imports nothing of the package.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T", bound=type)

_FACTORY = object()  # the default of a parameter whose field has a default factory


def lean_init(cls: T) -> T:
    """Give the frozen dataclass `cls` an ``__init__`` that sets its fields through its
    ``__dict__`` (see the module docstring). Refuses a class this cannot do exactly for: not
    a frozen dataclass, with slots, a ``__post_init__``, or a field left out of ``__init__``."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen:
        raise TypeError(f"lean_init: {cls.__name__} is not a frozen dataclass")
    if "__slots__" in cls.__dict__ or hasattr(cls, "__post_init__"):
        raise TypeError(f"lean_init: {cls.__name__} has slots or a __post_init__")
    namespace: dict[str, Any] = {"_FACTORY": _FACTORY}
    positional: list[str] = []
    keywords: list[str] = []
    values: list[str] = []
    for f in dataclasses.fields(cls):
        if not f.init:
            raise TypeError(f"lean_init: {cls.__name__}.{f.name} is not an init field")
        name = f.name
        if f.default is not dataclasses.MISSING:
            namespace[f"_default_{name}"] = f.default
            param = f"{name}=_default_{name}"
            value = name
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{name}"] = f.default_factory
            param = f"{name}=_FACTORY"
            value = f"_factory_{name}() if {name} is _FACTORY else {name}"
        else:
            param = value = name
        (keywords if f.kw_only else positional).append(param)
        values.append(f"{name}={value}")
    signature = ", ".join(["self", *positional, *(["*", *keywords] if keywords else [])])
    source = f"def __init__({signature}):\n    self.__dict__.update({', '.join(values)})\n"
    exec(source, namespace)  # noqa: S102 - our own source, made from the field names above
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = vars(cls)["__init__"].__doc__
    setattr(cls, "__init__", init)  # noqa: B010 - mypy refuses assigning __init__
    return cls
