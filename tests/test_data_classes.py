"""`releasegate.data_classes.dataclass` makes the classes the standard `dataclasses.dataclass` makes: every class of
the package it decorates, and a set of made-up classes for what the package does not use today (field options,
inheritance, methods of a class's own, recursion, one field, no field, `order`/`slots` handed over whole), is made
twice in fresh interpreters, once by each decorator, and held to the same repr, equality (also against another
class, a subclass and a NaN held in both), hash, frozenness, `replace`, `asdict`, `fields`, `__match_args__`,
docstring, method names and `__dataclass_params__`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "releasegate"
USES = "from ..data_classes import dataclass"

MADE_UP = '''
import abc
from dataclasses import KW_ONLY, InitVar, field
from typing import ClassVar
from releasegate.data_classes import dataclass

@dataclass(frozen=True)
class Plain:
    a: int
    b: str = "x"

@dataclass(frozen=True)
class Options:
    shown: int
    hidden: int = field(default=0, repr=False)
    uncompared: int = field(default=0, compare=False)
    unhashed: int = field(default=0, hash=False)
    hashed_only: int = field(default=0, compare=False, hash=True)
    later: list = field(default_factory=list)
    derived: int = field(default=0, init=False)
    limit: ClassVar[int] = 3
    seed: InitVar[int] = 0
    _: KW_ONLY
    named: str = "n"

@dataclass(frozen=True)
class Child(Plain):
    c: float = 0.0

class Undecorated(Plain):
    pass

@dataclass
class Mutable:
    a: int
    items: list = field(default_factory=list)

@dataclass
class MutableChild(Mutable):
    b: int = 0

@dataclass(frozen=True)
class One:
    a: float

@dataclass(frozen=True)
class Empty:
    pass

@dataclass
class EmptyMutable:
    pass

@dataclass(frozen=True)
class OwnEq:
    a: int
    def __eq__(self, other):
        return True

@dataclass
class OwnEqMutable:
    a: int
    def __eq__(self, other):
        return True

@dataclass(frozen=True)
class OwnHash:
    a: int
    def __hash__(self):
        return 7

@dataclass
class OwnHashMutable:
    a: int
    def __hash__(self):
        return 8

@dataclass(frozen=True)
class OwnRepr:
    a: int
    def __repr__(self):
        return "mine"

@dataclass(frozen=True)
class SelfNamed:
    self: int
    other: int = 0

@dataclass(frozen=True)
class NoDoc:
    a: int
    b: "list[int] | None" = None

class Shape(abc.ABC):
    @abc.abstractmethod
    def __eq__(self, other): ...

@dataclass(frozen=True)
class Concrete(Shape):
    a: int

@dataclass(frozen=True, order=True)
class Ordered:
    a: int

@dataclass(slots=True)
class Slotted:
    a: int

class Outer:
    @dataclass(frozen=True)
    class Inner:
        a: int
'''

PROBE = '''
import dataclasses, json, sys
from releasegate import data_classes

made = []
def recording(decorate):
    def dataclass(cls=None, /, **options):
        def keep(cls):
            made.append(decorate(cls, **options))
            return made[-1]
        return keep if cls is None else keep(cls)
    return dataclass

ours = data_classes.dataclass
data_classes.dataclass = recording(dataclasses.dataclass if sys.argv[1] == "stock" else ours)
import importlib
for name in json.loads(sys.argv[2]):
    importlib.import_module(name)
import types
made_up = sys.modules["made_up"] = types.ModuleType("made_up")
exec(compile(sys.argv[3], "made_up", "exec"), made_up.__dict__)
sys.path.insert(0, sys.argv[4])
from test_data_classes import observe
print(json.dumps({f"{c.__module__}.{c.__qualname__}": observe(c) for c in made}))
'''


def _outcome(act):
    """What `act()` gives: its value as text, NotImplemented, or the exception it raises (type and message)."""
    try:
        value = act()
    except Exception as exc:  # noqa: BLE001 - what is raised is what is compared
        return f"raises {type(exc).__name__}: {exc}"
    return "NotImplemented" if value is NotImplemented else repr(value)


def _instance(cls, values):
    obj = object.__new__(cls)
    for field_, value in zip(dataclasses_fields(cls), values, strict=True):
        object.__setattr__(obj, field_.name, value)
    return obj


def dataclasses_fields(cls):
    import dataclasses

    return dataclasses.fields(cls)


def observe(cls) -> dict:
    """What a dataclass does, as text: the same text from both decorators is the same class."""
    import dataclasses

    fields = dataclasses.fields(cls)
    values = [i if i % 2 else f"v{i}" for i in range(len(fields))]
    a, b = _instance(cls, values), _instance(cls, list(values))
    other = _instance(cls, [*values[:-1], "other"]) if fields else _instance(cls, [])
    nan = float("nan")
    nan_a, nan_b = _instance(cls, [nan] * len(fields)), _instance(cls, [nan] * len(fields))
    looped = _instance(cls, values)
    if fields:
        object.__setattr__(looped, fields[0].name, [looped])
    seen = {
        "params": repr(cls.__dataclass_params__),
        "fields": [(f.name, f.repr, f.compare, f.hash, f.init, f.kw_only) for f in fields],
        "match_args": getattr(cls, "__match_args__", None),
        "doc": cls.__doc__,
        "hash_none": cls.__hash__ is None,
        "abstract": sorted(getattr(cls, "__abstractmethods__", ())),
        "methods": {name: getattr(getattr(cls, name), "__qualname__", None)
                    for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__",
                                 "__lt__") if getattr(cls, name, None) is not None},
        "repr": _outcome(lambda: repr(a)),
        "repr_looped": _outcome(lambda: repr(looped)),
        "eq": [_outcome(lambda: a == b), _outcome(lambda: a.__eq__(b)), _outcome(lambda: a.__eq__(other)),
               _outcome(lambda: a.__eq__(object())), _outcome(lambda: a != other), _outcome(lambda: nan_a == nan_b)],
        "hash": [_outcome(lambda: hash(a)), _outcome(lambda: hash(a) == hash(b)), _outcome(lambda: hash(nan_a) == hash(nan_b))],
        "setattr": _outcome(lambda: setattr(a, fields[0].name if fields else "x", 1)),
        "delattr": _outcome(lambda: delattr(b, fields[0].name if fields else "x")),
        "asdict": _outcome(lambda: dataclasses.asdict(other)),
        "replace": _outcome(lambda: repr(dataclasses.replace(other))),
    }
    try:
        sub = type("Sub", (cls,), {})
    except TypeError as exc:
        seen["subclass"] = str(exc)
    else:
        twin = _instance(sub, values)
        seen["subclass"] = [_outcome(lambda: repr(twin)), _outcome(lambda: a.__eq__(twin)), _outcome(lambda: twin == a),
                            _outcome(lambda: hash(twin))]
    return seen


def observed(decorator: str, modules: list[str]) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", PROBE, decorator, json.dumps(modules), MADE_UP, str(ROOT / "tests")],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def users() -> list[str]:
    """Every module of the package that decorates with data_classes.dataclass."""
    return sorted(".".join(("releasegate", *p.relative_to(PACKAGE).with_suffix("").parts))
                  for p in PACKAGE.rglob("*.py") if USES in p.read_text("utf-8"))


def test_every_class_is_what_the_standard_decorator_makes():
    modules = users()
    assert len(modules) > 50
    ours, stock = observed("ours", modules), observed("stock", modules)
    assert list(ours) == list(stock)
    assert sum(1 for name in ours if name.startswith("releasegate.")) > 100
    different = {name: {k: (ours[name][k], stock[name][k]) for k in ours[name] if ours[name][k] != stock[name][k]}
                 for name in ours if ours[name] != stock[name]}
    assert different == {}


def test_the_shared_methods_are_in_place():
    """The comparison above is between two decorators: ours installs shared code, not the generated one."""
    from releasegate.record.blessings import Blessing

    for name in ("__repr__", "__eq__", "__hash__"):
        assert getattr(Blessing, name).__code__.co_filename.endswith("data_classes.py")
    assert Blessing.__dataclass_params__.eq and Blessing.__dataclass_params__.repr
