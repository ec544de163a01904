"""What report.html's compiled page (`report_page`, written by scripts/compile_templates.py) calls at render time:
jinja2's lookups, tests and filters, each answering as jinja2 does under report.html's environment (autoescape on,
StrictUndefined, `finalize` making run text `inert`), so the page is byte for byte what jinja2 renders, without
loading jinja2 for every `gate`.

A name or attribute that is not there is an `Undefined`: only `is defined` may ask about it; printing, testing or
iterating it raises `UndefinedError` with jinja2's words, as StrictUndefined does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NoReturn

from markupsafe import Markup, escape

from ..text import inert

__all__ = ["Undefined", "UndefinedError", "attr", "item", "name", "text", "finalized", "replace", "breakable"]


class UndefinedError(Exception):
    """A template asked for something that is not there (jinja2's UndefinedError, by name and words)."""


def _type_words(obj: Any) -> str:
    if obj is None:
        return "None"
    cls = type(obj)
    return f"{cls.__name__} object" if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__} object"


class Undefined:
    """A missing name or attribute, strict: anything but `is defined` raises (jinja2's StrictUndefined)."""

    __slots__ = ("_obj", "_name", "_missing_name")

    def __init__(self, obj: Any = None, name: str | None = None, *, missing_name: bool = False) -> None:
        self._obj, self._name, self._missing_name = obj, name, missing_name

    def _fail(self, *args: Any, **kwargs: Any) -> NoReturn:
        if self._missing_name:
            raise UndefinedError(f"{self._name!r} is undefined")
        raise UndefinedError(f"{_type_words(self._obj)!r} has no attribute {self._name!r}")

    __str__ = __iter__ = __len__ = __bool__ = __eq__ = __ne__ = __hash__ = __contains__ = _fail
    __call__ = __getitem__ = __add__ = __radd__ = __lt__ = __le__ = __gt__ = __ge__ = __int__ = __float__ = _fail

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        self._fail()


def name(context: Mapping[str, Any], key: str) -> Any:
    """A name the template reads from what it was given."""
    return context[key] if key in context else Undefined(name=key, missing_name=True)


def attr(obj: Any, attribute: str) -> Any:
    """`obj.attribute`: the attribute, else the item of that name, else Undefined (jinja2's `getattr`)."""
    try:
        return getattr(obj, attribute)
    except AttributeError:
        pass
    try:
        return obj[attribute]
    except (TypeError, LookupError, AttributeError):
        return Undefined(obj, attribute)


def item(obj: Any, key: Any) -> Any:
    """`obj[key]`: the item, else (a string key) the attribute of that name, else Undefined (jinja2's `getitem`)."""
    try:
        return obj[key]
    except (AttributeError, TypeError, LookupError):
        if isinstance(key, str):
            try:
                return getattr(obj, key)
            except AttributeError:
                pass
        return Undefined(obj, key)


def finalized(value: Any) -> Any:
    """Every printed value, before escaping: run text made `inert`; the template's own Markup (CSS, SVG) as is."""
    return inert(value) if isinstance(value, str) and not isinstance(value, Markup) else value


def text(value: Any) -> str:
    """A printed value as the page holds it: `finalized`, then escaped."""
    return str(escape(finalized(value)))


def replace(value: Any, old: Any, new: Any) -> Any:
    """The `replace` filter with autoescape on, as jinja2 applies it (Markup stays Markup)."""
    if hasattr(old, "__html__") or hasattr(new, "__html__") and not hasattr(value, "__html__"):
        value = escape(value)
    elif not isinstance(value, str):
        value = str(value)
    return value.replace(_str(old), _str(new), -1)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


_TOKEN_END = re.compile(r"([,:{\[])(?=\S)")
_TAG_PART_END = re.compile(r"([=_./:-])(?=\S)")


def breakable(value: Any, tag: bool = False) -> Markup:
    """Run text escaped, with a line-break opportunity (<wbr>) after each ',', ':', '{' and '[' that a space does
    not follow: compact JSON wraps between its tokens, and the CSS never has to break inside one (a key, a string,
    a number). A tag (`tag`) may wrap after '=', '_', '.', '/', ':' and '-': 'kind=must_refuse_bait' breaks at
    its parts. Escaping first leaves no entity to split: none holds those characters."""
    pattern = _TAG_PART_END if tag else _TOKEN_END
    return Markup(pattern.sub(r"\1<wbr>", str(escape(inert(str(value))))))
