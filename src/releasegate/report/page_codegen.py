"""report.html's template written as Python ahead of time (scripts/compile_templates.py): jinja2 parses
templates/report.html.j2 with the page's options, and each node becomes the Python that renders it the way jinja2's
own code does (`page_runtime` holds its lookups, tests and filters), into report/report_page.py. A `gate` then
renders report.html as it runs any function, without loading jinja2 or compiling the template (together a fifth
of a `gate` on the demo run).

Only what the template uses is translated; any other node stops the script naming it, so a template edit that
needs more says so here instead of rendering something else. `reference_environment` is the environment the
template was rendered with before: tests render runs with both and compare the pages byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib import resources
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, nodes
from jinja2.optimizer import optimize
from markupsafe import escape

from .formatting import format_interval, format_metric, format_money, format_value
from .page_runtime import breakable, finalized

__all__ = ["TEMPLATE", "module_source", "reference_environment"]

TEMPLATE = "report.html.j2"
OPTIONS: dict[str, Any] = {"autoescape": True, "undefined": StrictUndefined, "trim_blocks": True,
                           "lstrip_blocks": True, "finalize": finalized}
FILTERS: dict[str, Callable[..., Any]] = {
    "num": format_value, "interval": format_interval, "money": format_money,
    "metric": lambda value, name: format_metric(name, value), "breakable": breakable,
}
_CALLS = {"num": "format_value({v})", "interval": "format_interval({v})", "money": "format_money({v})",
          "metric": "format_metric({a0}, {v})", "breakable": "breakable({v}{args})", "length": "len({v})",
          "replace": "replace({v}{args})", "safe": "Markup({v})"}
"""Each filter the template uses, as the call the page makes: {v} the value, {a0} the first argument, {args} all of
them (keywords too), each after a comma."""
_COMPARE = {"eq": "==", "ne": "!=", "gt": ">", "gteq": ">=", "lt": "<", "lteq": "<=", "in": "in", "notin": "not in"}
_LOOP = {"first": "({i} == 0)", "last": "({i} == {n} - 1)", "index": "({i} + 1)", "index0": "{i}", "length": "{n}"}


def reference_environment() -> Environment:
    """jinja2's environment for report.html, with the options and filters the compiled page reproduces."""
    env = Environment(loader=FileSystemLoader(str(resources.files(__package__) / "templates")), **OPTIONS)
    env.filters.update(FILTERS)
    return env


class _Loop:
    """A loop in scope as `loop`: the Python names of its index and length."""

    def __init__(self, index: str, length: str) -> None:
        self.index, self.length = index, length


class _Writer:
    """The page's Python: lines at an indent, Python names for the template's names, scope by scope."""

    def __init__(self, eval_ctx: nodes.EvalContext) -> None:
        self.eval_ctx = eval_ctx
        self.lines: list[str] = []
        self.indent = 1
        self.scopes: list[dict[str, Any]] = [{}]
        self.top: set[str] = set()
        self.counter = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)

    def fresh(self, name: str) -> str:
        self.counter += 1
        return f"l{self.counter}_{name}"

    def lookup(self, name: str) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        self.top.add(name)
        return f"v_{name}"


def module_source(header: str) -> str:
    """report_page.py for the template as it is now, `header` its docstring."""
    env = reference_environment()
    source = env.loader.get_source(env, TEMPLATE)[0] if env.loader else ""
    tree = optimize(env.parse(source, TEMPLATE), env)
    assert isinstance(tree, nodes.Template)
    writer = _Writer(nodes.EvalContext(env))
    writer.line("out: list[str] = []")
    writer.line("w = out.append")
    _statements(writer, tree.body)
    writer.line('return "".join(out)')
    reads = [f"    v_{n} = name(context, {n!r})" for n in sorted(writer.top)]
    return "\n".join([
        header, "# ruff: noqa", "# mypy: ignore-errors", "from collections.abc import Mapping",
        "from typing import Any", "", "from markupsafe import Markup", "",
        "from .formatting import format_interval, format_metric, format_money, format_value",
        "from .page_runtime import Undefined, attr, breakable, item, name, replace, text", "",
        "", "def render(context: Mapping[str, Any]) -> str:", '    """The page for `context` (the names the template reads)."""',
        *reads, *writer.lines, "",
    ])


def _statements(w: _Writer, body: list[nodes.Node]) -> None:
    for node in body:
        _statement(w, node)


def _statement(w: _Writer, node: nodes.Node) -> None:
    if isinstance(node, nodes.Output):
        _output(w, node)
    elif isinstance(node, nodes.If):
        _if(w, node)
    elif isinstance(node, nodes.For):
        _for(w, node)
    elif isinstance(node, nodes.Assign) and isinstance(node.target, nodes.Name):
        target = w.fresh(node.target.name)
        w.line(f"{target} = {_expr(w, node.node)}")
        w.scopes[-1][node.target.name] = target
    elif isinstance(node, nodes.Macro) and not node.defaults:
        _macro(w, node)
    else:
        raise ValueError(f"{TEMPLATE}:{node.lineno}: {type(node).__name__} is not translated")


def _output(w: _Writer, node: nodes.Output) -> None:
    """Template text as it is; a value through `text` (finalize, then escape), or folded when constant, as
    jinja2 folds it (escaped, then finalized: Markup, left as it is)."""
    for child in node.nodes:
        try:
            const = child.as_const(w.eval_ctx)
        except Exception:  # jinja2 folds what it can and renders the rest, as here
            w.line(f"w(text({_expr(w, child)}))")
            continue
        w.line(f"w({str(escape(const))!r})")


def _if(w: _Writer, node: nodes.If) -> None:
    w.line(f"if {_expr(w, node.test)}:")
    _block(w, node.body)
    for other in node.elif_:
        w.line(f"elif {_expr(w, other.test)}:")
        _block(w, other.body)
    if node.else_:
        w.line("else:")
        _block(w, node.else_)


def _block(w: _Writer, body: list[nodes.Node], scope: dict[str, Any] | None = None) -> None:
    w.indent += 1
    w.scopes.append(scope or {})
    if not body:
        w.line("pass")
    _statements(w, body)
    w.scopes.pop()
    w.indent -= 1


def _for(w: _Writer, node: nodes.For) -> None:
    """A loop: its items read once when it says `loop.` or has an `else` (run when there was no item) or a filter
    (`for x in xs if test`: `loop` counts the items kept, as jinja2's does)."""
    if node.recursive:
        raise ValueError(f"{TEMPLATE}:{node.lineno}: a recursive loop is not translated")
    iterable = _expr(w, node.iter)
    scope: dict[str, Any] = {}
    target = _target(w, node.target, scope)
    uses_loop = any(n.name == "loop" for n in _names(node.body))
    if not (uses_loop or node.else_ or node.test):
        w.line(f"for {target} in {iterable}:")
        _block(w, node.body, scope)
        return
    items, index = w.fresh("items"), w.fresh("i")
    if node.test is not None:
        w.scopes.append(scope)
        kept = _expr(w, node.test)
        w.scopes.pop()
        w.line(f"{items} = [{target} for {target} in {iterable} if {kept}]")
    else:
        w.line(f"{items} = list({iterable})")
    scope["loop"] = _Loop(index, f"len({items})")
    w.line(f"for {index}, {target} in enumerate({items}):")
    _block(w, node.body, scope)
    if node.else_:
        w.line(f"if not {items}:")
        _block(w, node.else_)


def _names(body: list[nodes.Node]) -> Iterator[nodes.Name]:
    for node in body:
        yield from node.find_all(nodes.Name)


def _target(w: _Writer, target: nodes.Node, scope: dict[str, Any]) -> str:
    if isinstance(target, nodes.Name):
        scope[target.name] = w.fresh(target.name)
        return str(scope[target.name])
    if isinstance(target, nodes.Tuple):
        return "(" + ", ".join(_target(w, t, scope) for t in target.items) + ")"
    raise ValueError(f"{TEMPLATE}:{target.lineno}: a loop target {type(target).__name__} is not translated")


def _macro(w: _Writer, node: nodes.Macro) -> None:
    """A macro: a function whose output is Markup (autoescape on), called as the template calls it."""
    function = w.fresh(node.name)
    w.scopes[-1][node.name] = function
    scope = {a.name: w.fresh(a.name) for a in node.args}
    w.line(f"def {function}({', '.join(scope.values())}):")
    w.indent += 1
    w.line("out: list[str] = []")
    w.line("w = out.append")
    w.indent -= 1
    _block(w, node.body, scope)
    w.indent += 1
    w.line('return Markup("".join(out))')
    w.indent -= 1


def _expr(w: _Writer, node: nodes.Node) -> str:
    """The Python for an expression, each lookup, test and filter as jinja2 makes it."""
    if isinstance(node, nodes.Const):
        return repr(node.value)
    if isinstance(node, nodes.Name):
        found = w.lookup(node.name)
        if isinstance(found, _Loop):
            raise ValueError(f"{TEMPLATE}:{node.lineno}: `loop` is translated only as loop.first, .last, .index")
        return str(found)
    if isinstance(node, nodes.Getattr):
        if isinstance(node.node, nodes.Name) and isinstance(loop := w.lookup(node.node.name), _Loop):
            return _LOOP[node.attr].format(i=loop.index, n=loop.length)
        return f"attr({_expr(w, node.node)}, {node.attr!r})"
    if isinstance(node, nodes.Getitem):
        return f"item({_expr(w, node.node)}, {_expr(w, node.arg)})"
    if isinstance(node, (nodes.Tuple, nodes.List)):
        inner = ", ".join(_expr(w, i) for i in node.items)
        return f"({inner},)" if isinstance(node, nodes.Tuple) else f"[{inner}]"
    if isinstance(node, nodes.Not):
        return f"(not {_expr(w, node.node)})"
    if isinstance(node, (nodes.And, nodes.Or)):
        op = "and" if isinstance(node, nodes.And) else "or"
        return f"({_expr(w, node.left)} {op} {_expr(w, node.right)})"
    if isinstance(node, nodes.Neg):
        return f"(-{_expr(w, node.node)})"
    if isinstance(node, nodes.CondExpr) and node.expr2 is not None:
        return f"({_expr(w, node.expr1)} if {_expr(w, node.test)} else {_expr(w, node.expr2)})"
    if isinstance(node, nodes.Compare):
        return "(" + _expr(w, node.expr) + "".join(f" {_COMPARE[o.op]} {_expr(w, o.expr)}" for o in node.ops) + ")"
    if isinstance(node, (nodes.Filter, nodes.Test, nodes.Call)) and not (node.dyn_args or node.dyn_kwargs):
        return _call(w, node)
    raise ValueError(f"{TEMPLATE}:{node.lineno}: {type(node).__name__} is not translated")


def _call(w: _Writer, node: nodes.Filter | nodes.Test | nodes.Call) -> str:
    args = [_expr(w, a) for a in node.args] + [f"{k.key}={_expr(w, k.value)}" for k in node.kwargs]
    if isinstance(node, nodes.Call):
        return f"{_expr(w, node.node)}({', '.join(args)})"
    value = _expr(w, node.node) if node.node is not None else ""
    if isinstance(node, nodes.Test):
        tests = {"defined": f"(not isinstance({value}, Undefined))", "none": f"({value} is None)"}
        if node.name not in tests or args:
            raise ValueError(f"{TEMPLATE}:{node.lineno}: the test `{node.name}` is not translated")
        return tests[node.name]
    if node.name not in _CALLS:
        raise ValueError(f"{TEMPLATE}:{node.lineno}: the filter `{node.name}` is not translated")
    return _CALLS[node.name].format(v=value, a0=args[0] if args else "", args="".join(f", {a}" for a in args))
