"""Jinja templates a config brings (suite `template:`, the judge's prompt): sandboxed, and rendered on a budget.

Jinja's immutable sandbox keeps a template away from Python internals and from changing its data
(`row.pop(...)`), but not from burning CPU or memory: nested `range` loops, `9**(9**8)`, `'A' * 10**10`, `x ~ x`
doubled. So every render here has a budget, checked as it goes: CPU time (`MAX_SECONDS` of this thread's time,
checked at every call, attribute lookup, operator, loop step and output chunk), characters (`MAX_CHARS` for the
output and for any string or list an operator, call or filter builds; an integer argument past it is refused
before the call) and integer size (`MAX_INT_BITS`). `range` keeps the sandbox's 100,000 limit.

Every failure, the budget's or any exception a template raises (ZeroDivisionError, KeyError, IndexError from
`"{0}".format()`, RecursionError from a recursive macro, an `{% include %}` with nothing to include), is one
`TemplateFailed` with a one-line message: the caller turns it into exit 2 (validate, a suite's rows) or a per-case
error (the judge's prompt at run time).
"""

from __future__ import annotations

import contextvars
import functools
import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # jinja2 is imported on first use
    from jinja2 import Environment, Template

__all__ = ["MAX_SECONDS", "MAX_CHARS", "MAX_INT_BITS", "TemplateFailed", "compile_template", "render"]

MAX_SECONDS = 1.0
"""CPU seconds one render may take (a prompt template takes milliseconds)."""
MAX_CHARS = 4_000_000
"""Characters of one render's output, and of any string or list built while rendering."""
MAX_INT_BITS = 65_536
"""Bits of any integer an operator makes (2**65536 has 19,729 digits)."""


class TemplateFailed(ValueError):
    """A template that did not compile or render: `message` is one line; `cause` the exception behind it."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.cause = cause


class _Budget:
    def __init__(self) -> None:
        self.deadline = time.thread_time() + MAX_SECONDS

    def tick(self) -> None:
        if time.thread_time() > self.deadline:
            raise TemplateFailed(f"rendering took more than {MAX_SECONDS:g} s of CPU (its render budget)")


_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("template_budget", default=None)


def _tick() -> None:
    budget = _BUDGET.get()
    if budget is not None:
        budget.tick()


def _sized(value: Any) -> Any:
    """`value`, unless it is a string or a collection past MAX_CHARS, or an integer past MAX_INT_BITS."""
    if isinstance(value, (str, bytes, list, tuple, dict, set)) and len(value) > MAX_CHARS:
        raise TemplateFailed(f"builds a value of {len(value):,} items or characters, more than {MAX_CHARS:,}")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise TemplateFailed(f"builds an integer of more than {MAX_INT_BITS:,} bits")
    return value


_WIDE_FORMAT = re.compile(r"[0-9]{7,}")  # a format width or precision of a million or more: "{:>999999999}"


def _check_arguments(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    for value in (*args, *kwargs.values()):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_CHARS:
            raise TemplateFailed(f"passes {value:,} to a function or filter; at most {MAX_CHARS:,}")


def _repeated(left: Any, right: Any) -> tuple[str | list[Any] | tuple[Any, ...], int] | None:
    """(sequence, count) of `left * right` that repeats a sequence (either operand may be the sequence)."""
    if isinstance(left, (str, list, tuple)) and isinstance(right, int):
        return left, right
    if isinstance(right, (str, list, tuple)) and isinstance(left, int):
        return right, left
    return None


def _binop_size(operator: str, left: Any, right: Any) -> None:
    """Refuse, before computing it, an operation whose result is past the budget."""
    if operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0:
        if max(left.bit_length(), 1) * right > MAX_INT_BITS and abs(left) > 1:
            raise TemplateFailed(f"computes a power of more than {MAX_INT_BITS:,} bits")
    elif operator == "*":
        if isinstance(left, int) and isinstance(right, int):
            if left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise TemplateFailed(f"computes a product of more than {MAX_INT_BITS:,} bits")
        elif (repeated := _repeated(left, right)) is not None:
            seq, n = repeated
            if len(seq) * n > MAX_CHARS:
                raise TemplateFailed(f"repeats a value to {len(seq) * n:,} characters, more than {MAX_CHARS:,}")
    elif operator == "+" and isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
        if len(left) + len(right) > MAX_CHARS:
            raise TemplateFailed(f"joins values past {MAX_CHARS:,} characters")
    elif operator == "%" and isinstance(left, str) and _WIDE_FORMAT.search(left):
        raise TemplateFailed("formats with a width or precision of a million or more")


class _Range:
    """`range` for templates: the sandbox's size limit, a budget tick at each step, len() as a range has."""

    def __init__(self, *args: int) -> None:
        from jinja2.sandbox import MAX_RANGE

        self._range = range(*args)
        if len(self._range) > MAX_RANGE:
            raise TemplateFailed(f"range of {len(self._range):,} items; at most {MAX_RANGE:,}")

    def __iter__(self) -> Iterator[int]:
        for value in self._range:
            _tick()
            yield value

    def __len__(self) -> int:
        return len(self._range)

    def __getitem__(self, index: int) -> int:
        return self._range[index]

    def __contains__(self, value: object) -> bool:
        return value in self._range

    def __reversed__(self) -> Iterator[int]:
        return reversed(self._range)


@functools.cache
def _environment() -> Environment:
    from jinja2 import StrictUndefined
    from jinja2.compiler import CodeGenerator
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    from jinja2.utils import Namespace

    class Generator(CodeGenerator):
        def visit_Concat(self, node: Any, frame: Any) -> None:  # `a ~ b`: through the budget (Jinja joins it inline otherwise)
            if frame.eval_ctx.volatile or frame.eval_ctx.autoescape:
                super().visit_Concat(node, frame)
                return
            self.write("environment.joined((")
            for arg in node.nodes:
                self.visit(arg, frame)
                self.write(", ")
            self.write("))")

    class BudgetedNamespace(Namespace):
        def __setitem__(self, name: str, value: Any) -> None:  # {% set ns.x = ns.x ~ ns.x %} in a loop
            _tick()
            super().__setitem__(name, _sized(value))

    class Budgeted(ImmutableSandboxedEnvironment):
        code_generator_class = Generator
        intercepted_binops = frozenset({"*", "**", "+", "%", "//", "/"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            _tick()
            _binop_size(operator, left, right)
            return _sized(super().call_binop(context, operator, left, right))

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - Jinja's own signature
            _tick()
            _check_arguments(args, kwargs)
            return _sized(super().call(__context, __obj, *args, **kwargs))

        def getattr(self, obj: Any, attribute: str) -> Any:
            _tick()
            if isinstance(obj, str) and attribute in ("format", "format_map") and _WIDE_FORMAT.search(obj):
                raise TemplateFailed("formats with a width or precision of a million or more")
            return super().getattr(obj, attribute)

        def getitem(self, obj: Any, argument: Any) -> Any:
            _tick()
            return super().getitem(obj, argument)

        def joined(self, parts: tuple[Any, ...]) -> str:
            _tick()
            texts = [str(p) for p in parts]
            if sum(map(len, texts)) > MAX_CHARS:
                raise TemplateFailed(f"joins text past {MAX_CHARS:,} characters")
            return "".join(texts)

    env = Budgeted(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
    env.globals.update(range=_Range, namespace=BudgetedNamespace)
    env.filters = {name: _budgeted_filter(name, f) for name, f in env.filters.items()}
    return env


def _budgeted_filter(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
    """A filter with the call's checks: a tick, no huge integer argument (`center(10**9)`), a result in size.
    (functools.wraps copies Jinja's pass_context / pass_environment marker along.)"""

    @functools.wraps(f)
    def budgeted(*args: Any, **kwargs: Any) -> Any:
        _tick()
        _check_arguments(args[1:], kwargs)  # args[0]: the value filtered (or the context, then the value)
        if name == "format" and any(isinstance(a, str) and _WIDE_FORMAT.search(a) for a in args[:2]):
            raise TemplateFailed("formats with a width or precision of a million or more")
        return _sized(f(*args, **kwargs))

    return budgeted


def compile_template(text: str) -> Template:
    """The template compiled in the budgeted sandbox; TemplateFailed for a syntax error."""
    from jinja2 import TemplateSyntaxError

    try:
        return _environment().from_string(text)
    except TemplateSyntaxError as exc:
        raise TemplateFailed(f"template syntax error: {exc.message}", exc) from None
    except (RecursionError, MemoryError, ValueError, TypeError) as exc:  # nested past the parser
        raise TemplateFailed(f"template cannot be compiled: {_first_line(exc)}", exc) from None


def render(template: Template, context: dict[str, Any]) -> str:
    """`template` rendered with `context` within the budget; TemplateFailed for anything that goes wrong."""
    token = _BUDGET.set(_Budget())
    try:
        out, size = [], 0
        for chunk in template.generate(context):
            _tick()
            size += len(chunk)
            if size > MAX_CHARS:
                raise TemplateFailed(f"renders more than {MAX_CHARS:,} characters")
            out.append(chunk)
        return "".join(out)
    except TemplateFailed:
        raise
    except RecursionError as exc:
        raise TemplateFailed("recursion too deep (a macro or loop calling itself)", exc) from None
    except Exception as exc:  # whatever a template raises is the template's failure, never the run's
        raise TemplateFailed(_describe(exc), exc) from None
    finally:
        _BUDGET.reset(token)


def _describe(exc: Exception) -> str:
    from jinja2.exceptions import SecurityError, TemplateNotFound, UndefinedError

    if isinstance(exc, SecurityError):
        return f"is not allowed: {_first_line(exc)}"
    if isinstance(exc, UndefinedError):
        return _first_line(exc)
    if isinstance(exc, TemplateNotFound) or "no loader" in str(exc):
        return "includes or imports another template, which is not allowed (a template is one text)"
    return f"failed: {type(exc).__name__}: {_first_line(exc)}"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."
