"""A user's JSON Schema (a format check's, a tool's parameters) checked for the `$ref`s jsonschema cannot follow,
before anything runs: one that resolves to nothing (a missing pointer or anchor, a schema releasegate does not
fetch), and one that leads back to the schema it stands in without reaching into the value (`{"$ref": "#"}`,
an `allOf` of a `$defs` entry that refers back), which jsonschema follows until Python stops it. Either would make
every check of the schema a crash or a fail that says nothing of the output; each is refused where it is written.
`$ref`s are resolved as jsonschema resolves them (a nested `$id` is the base of the refs under it).
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError, Where

__all__ = ["check_refs"]

_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE = ("not", "if", "then", "else")
_IN_PLACE_MAPS = ("dependentSchemas",)
"""The keywords that apply their schemas to the value itself, not to a part of it: a loop through them alone
never ends."""


def check_refs(schema: Any, where: Where, *, local_only: bool = False) -> None:
    """Refuse (InputError at `where`) a `$ref` of `schema` that resolves to nothing or loops back in place.
    `local_only`: a `$ref` that does not start with '#' is refused as pointing outside the schema."""
    from jsonschema.validators import SPECIFICATIONS  # the schemas jsonschema itself knows (its meta-schemas)
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    stack = [(schema, SPECIFICATIONS.resolver_with_root(DRAFT202012.create_resource(schema)))]
    nodes: dict[int, list[tuple[str, Any]]] = {}  # id(node) -> its in-place parts: (how reached, the part)
    while stack:
        node, resolver = stack.pop()
        if not isinstance(node, dict) or id(node) in nodes:
            continue
        resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
        parts = nodes[id(node)] = _in_place(node)
        ref = node.get("$ref")
        if isinstance(ref, str):
            if local_only and not ref.startswith("#"):
                raise InputError(f"$ref '{ref[:80]}' points outside the schema (no schema is fetched)", **where,
                                 hint="inline it under $defs and refer to it as #/$defs/NAME")
            try:
                parts.append((f"$ref '{ref[:80]}'", resolver.lookup(ref).contents))
            except Unresolvable:
                raise InputError(f"$ref '{ref[:80]}' resolves to nothing in the schema", **where,
                                 hint="point it at a part of the schema (#/$defs/NAME), or inline what it names") from None
        stack.extend((sub, resolver) for sub in DRAFT202012.subresources_of(node))
    _refuse_loops(schema, nodes, where)


def _in_place(node: dict[str, Any]) -> list[tuple[str, Any]]:
    parts = [(key, sub) for key in _IN_PLACE_LISTS if isinstance(node.get(key), list) for sub in node[key]]
    parts += [(key, node[key]) for key in _IN_PLACE if key in node]
    return parts + [(key, sub) for key in _IN_PLACE_MAPS if isinstance(node.get(key), dict) for sub in node[key].values()]


def _refuse_loops(schema: Any, nodes: dict[int, list[tuple[str, Any]]], where: Where) -> None:
    """A path of in-place parts from a node back to itself (depth first, without recursion: a schema may nest
    deeply): refused, naming the `$ref` that closes it."""
    state: dict[int, bool] = {}  # id -> True while on the path, False once done
    for start in nodes:
        if start in state:
            continue
        state[start] = True
        path = [(start, iter(nodes[start]))]
        while path:
            at, parts = path[-1]
            step = next(parts, None)
            if step is None:
                state[at] = False
                path.pop()
                continue
            how, sub = step
            key = id(sub)
            if state.get(key) is True:
                raise InputError(f"a $ref loops back ({how}) to the schema it stands in without reaching into the "
                                 "value: jsonschema would follow it without end", **where,
                                 hint="refer to a part of the value (under properties or items), or drop the $ref")
            if key in nodes and key not in state:
                state[key] = True
                path.append((key, iter(nodes[key])))
