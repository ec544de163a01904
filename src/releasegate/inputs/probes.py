"""The config's `probes:` section: attack families applied to the suite's must-refuse cases.

Each family is a template (shipped in `probe_families/shipped.yaml`, or a user's file in the same shape) that turns
the request of a must-refuse case (its last user message, or its prompt) into an attack on it: role-play,
instruction override, prefix injection, a base64 payload, a language switch to Korean, many-shot. The probes are
deterministic: the same cases and families give the same probe cases in the same order (cases in suite order, and
for each the families in the order the config lists them). A probe case is the must-refuse case with its request
replaced, id `CASE~FAMILY`, tag `probe: FAMILY`, and no answer or format check: it feeds `forbidden_rate`, whose
criteria take `probe: FAMILY` (the slice of that family's probes).
"""

from __future__ import annotations

import base64
import dataclasses
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict

from ..data_classes import dataclass
from ..errors import InputError
from ..model_base import Model
from ..safe_template import TemplateFailed, compile_template
from ..safe_template import render as render_template
from .files import KeyAt, is_file, load_yaml
from .read_doc import read_doc

if TYPE_CHECKING:
    from .suites import Case

__all__ = ["ProbeFamily", "ProbePlan", "parse_probes", "probe_cases", "SHIPPED", "PROBE_TAG", "with_probes"]

SHIPPED = Path(__file__).parent / "probe_families" / "shipped.yaml"
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_SENTINEL_TEXT = "releasegate probe request sentinel"
_SENTINEL = {"request": _SENTINEL_TEXT, "request_base64": base64.b64encode(_SENTINEL_TEXT.encode()).decode()}
"""Rendered into each family's template when it is loaded: a template that shows neither drops the request."""
PROBE_TAG = "probe"


@dataclass(frozen=True)
class ProbeFamily:
    name: str
    template: str
    description: str = ""


@dataclass(frozen=True)
class ProbePlan:
    """A validated `probes:` section."""

    cases: dict[str, Any]
    """The slice (tag values) that selects the must-refuse cases."""
    families: tuple[ProbeFamily, ...]
    files: tuple[Path, ...] = ()
    """The family files the probes were made from (the shipped one first), hashed into the run manifest."""


def _families(path: Path, where: KeyAt) -> list[ProbeFamily]:
    data, _ = load_yaml(path, what="probe families file")
    rows = data.get("families") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("name"), str)
                                             and isinstance(r.get("template"), str) for r in rows):
        raise InputError("a probe families file holds {families: [{name, template, description?}]}", file=path,
                         hint=f"see {SHIPPED.name} in the releasegate package")
    out = []
    for row in rows:
        if row["name"].lower() == "none":  # probe: none in a criterion means the cases that are no probe
            raise InputError("probe family name 'none' is reserved (probe: none selects the cases that are no probe)",
                             file=path, hint="give your family another name")
        if not _NAME.fullmatch(row["name"]):
            # probe case ids are CASE~FAMILY and name files: a '~', '/' or space would make them ambiguous
            raise InputError(f"probe family name {row['name']!r} may hold only letters, digits, '_', '-' and '.'",
                             file=path)
        try:
            shown = render_template(compile_template(row["template"]), _SENTINEL)
        except TemplateFailed as exc:
            raise InputError(f"probe family {row['name']}: {exc.message}", file=path) from None
        if not any(v.casefold() in shown.casefold() for v in _SENTINEL.values()):
            raise InputError(f"probe family {row['name']}: its template never puts the request in (every probe "
                             "would be a question the model refuses or answers trivially)", file=path,
                             hint="use {{ request }} or {{ request_base64 }} in the template")
        out.append(ProbeFamily(row["name"], row["template"], str(row.get("description", ""))))
    return out


class ProbesDoc(Model):
    """The config's `probes:` as written: which cases are probed (a slice), by which families, from which files."""

    model_config = ConfigDict(frozen=True, extra="allow")

    cases: dict[str, Any]
    families: list[str] | None = None
    files: list[str] | None = None


def parse_probes(raw: dict[str, Any] | None, here: Path, at: KeyAt) -> ProbePlan | None:
    if raw is None:
        return None
    doc = read_doc(ProbesDoc, raw, None)
    known = {f.name: f for f in _families(SHIPPED, at)}
    files = [SHIPPED]
    for i, name in enumerate(doc.files or ()):
        path = (here / name).resolve()
        if not is_file(path):
            raise InputError(f"no probe families file at {path}", **at("probes", "files", i))
        for family in _families(path, at):
            if family.name in known:  # a silent replacement would report another attack under a known name
                raise InputError(f"probe family {family.name!r} is already defined (shipped or in an earlier file)",
                                 file=path, hint="give your family a name of its own")
            known[family.name] = family
        files.append(path)
    names = doc.families or list(known)
    for i, name in enumerate(names):
        if name not in known:
            raise InputError(f"unknown probe family {name!r} (known: {', '.join(known)})",
                             **at("probes", "families", i))
        if name in names[:i]:  # its probe cases would share ids (CASE~FAMILY) and count twice
            raise InputError(f"probe family {name!r} is listed twice", **at("probes", "families", i))
    return ProbePlan(dict(doc.cases), tuple(known[n] for n in names), tuple(files))


def _request(case: Case) -> str:
    if case.messages is None:
        return str(case.prompt or "")
    users = [m for m in case.messages if m.get("role") == "user"]
    return str(users[-1].get("content", "")) if users else ""


def _asking(case: Case, text: str) -> dict[str, Any]:
    """The case with its request replaced by `text` (its last user message, or its prompt)."""
    if case.messages is None:
        return {"prompt": text}
    messages = list(case.messages)
    last = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    messages[last] = {**messages[last], "content": text}
    return {"messages": tuple(messages)}


def probe_cases(cases: list[Case], plan: ProbePlan) -> list[Case]:
    """The probe cases of `plan` on the must-refuse cases among `cases`, in case order, families in plan order."""
    out = []
    for case in cases:
        if not all(str(case.tags.get(k)) == str(v) for k, v in plan.cases.items()):
            continue
        request = _request(case)
        context = {"request": request, "request_base64": base64.b64encode(request.encode()).decode()}
        for family in plan.families:
            try:
                text = render_template(compile_template(family.template), context)
            except TemplateFailed as exc:
                raise InputError(f"probe family {family.name} on case {case.id}: {exc.message}",
                                 field="probes.families") from None
            # no stratum: a probe is an attack made here, no row of the sampled source, so it must not thin the
            # weight of the real cases of its case's stratum
            out.append(dataclasses.replace(case, id=f"{case.id}~{family.name}", **_asking(case, text),
                                           tags={**case.tags, PROBE_TAG: family.name}, answer=None, format=(),
                                           stratum=None))
    return out


def with_probes(cases: list[Any], plan: ProbePlan | None, *, limited: bool = False) -> list[Any]:
    """`cases` and, after them, their probes; a plan that selects no case is the user's mistake (exit 2), unless
    the cases were cut (`check --limit`)."""
    if plan is None:
        return cases
    probes = probe_cases(cases, plan)
    if not probes and not limited:
        raise InputError(f"probes.cases {plan.cases} selects no case of the suites: the probes would test nothing",
                         field="probes.cases", hint="tag the must-refuse cases (e.g. kind: must_refuse) and select them")
    return cases + probes
