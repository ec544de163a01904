"""`dataclass` as the standard library's, made cheaper to define: a command imports a hundred or more of them, and
the standard decorator writes and compiles the source of each class's methods anew on every start.

This one asks `dataclasses.dataclass` for what only it can make (`__init__`, a frozen class's `__setattr__` and
`__delattr__`, `__match_args__`, the fields and params that `fields`, `replace` and `asdict` read) and installs
`__repr__`, `__eq__` and `__hash__` made of shared code, each answering as the generated one would: the same
repr text (`...` for a recursive one), the same equality (fields compared as a tuple, `NotImplemented` for another
class), the same hash (a frozen class's fields hashed as a tuple), `field(repr=..., compare=..., hash=...)`
honoured, a method the class defines itself kept, and the same `__dataclass_params__`. Anything else (`order`,
`unsafe_hash`, `slots`, ...) goes to the standard decorator whole. tests/test_data_classes.py holds every class
of the package to what the standard decorator makes of it. Type checkers see the standard decorator.
"""

from __future__ import annotations

import _thread
import abc
import dataclasses
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any

__all__ = ["dataclass"]

if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:

    def dataclass(cls: type | None = None, /, *, frozen: bool = False, **options: Any) -> Any:
        """`dataclasses.dataclass(cls, frozen=...)`, its `__repr__`, `__eq__` and `__hash__` shared code; any
        other option hands the class to the standard decorator as it is."""
        if options:
            return dataclasses.dataclass(cls, frozen=frozen, **options)
        if cls is None:
            return lambda cls: _made(cls, frozen)
        return _made(cls, frozen)


def _made(cls: Any, frozen: bool) -> Any:
    # decided before the standard decorator runs, as it decides it: a class that defines __eq__ but no __hash__
    # holds __hash__ = None, which counts as no hash of its own
    explicit_hash = "__hash__" in vars(cls) and not (cls.__hash__ is None and "__eq__" in vars(cls))
    cls = dataclasses.dataclass(cls, frozen=frozen, repr=False, eq=False)
    cls.__dataclass_params__.repr = cls.__dataclass_params__.eq = True  # as the standard decorator records them
    fields = dataclasses.fields(cls)
    _install(cls, "__repr__", _repr([f.name for f in fields if f.repr]))
    _install(cls, "__eq__", _eq([f.name for f in fields if f.compare]))
    if not explicit_hash:
        if frozen:
            hashed = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
            cls.__hash__ = _named(cls, _hash(hashed))
        else:
            cls.__hash__ = None
    abc.update_abstractmethods(cls)
    return cls


def _install(cls: type, name: str, method: Callable[..., Any]) -> None:
    """As the standard decorator sets a method: never over one the class defines itself."""
    if name not in cls.__dict__:
        setattr(cls, name, _named(cls, method))


def _named(cls: type, method: Callable[..., Any]) -> Callable[..., Any]:
    method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
    method.__module__ = cls.__module__
    return method


def _values(names: list[str]) -> Callable[[object], tuple[Any, ...]]:
    """The fields named, read off an instance as a tuple (a 1-tuple for one field, as the generated code builds)."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        name = names[0]
        return lambda obj: (getattr(obj, name),)
    return attrgetter(*names)


def _repr(names: list[str]) -> Callable[[object], str]:
    running: set[tuple[int, int]] = set()
    labels = [f"{name}=" for name in names]

    def __repr__(self: object) -> str:
        key = id(self), _thread.get_ident()
        if key in running:
            return "..."
        running.add(key)
        try:
            shown = ", ".join([label + repr(getattr(self, name)) for label, name in zip(labels, names, strict=True)])
            return f"{self.__class__.__qualname__}({shown})"
        finally:
            running.discard(key)

    return __repr__


def _eq(names: list[str]) -> Callable[[object, object], Any]:
    values = _values(names)

    def __eq__(self: object, other: object) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash(names: list[str]) -> Callable[[object], int]:
    values = _values(names)

    def __hash__(self: object) -> int:
        return hash(values(self))

    return __hash__
