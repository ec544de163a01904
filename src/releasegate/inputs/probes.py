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
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..safe_template import TemplateFailed, compile_template
from ..safe_template import render as render_template
from .files import is_file, load_yaml

__all__ = ["ProbeFamily", "ProbePlan", "parse_probes", "probe_cases", "SHIPPED", "PROBE_TAG", "with_probes"]

SHIPPED = Path(__file__).parent / "probe_families" / "shipped.yaml"
PROBE_TAG = "probe"


@dataclass(frozen=True)
class ProbeFamily:
    name: str
    template: str
    description: str = ""


@dataclass(frozen=True)
class ProbePlan:
    """A validated `probes:` section."""

    cases: dict
    """The slice (tag values) that selects the must-refuse cases."""
    families: tuple[ProbeFamily, ...]
    files: tuple[Path, ...] = ()
    """The family files the probes were made from (the shipped one first), hashed into the run manifest."""


def _families(path: Path, where) -> list[ProbeFamily]:
    data, _ = load_yaml(path, what="probe families file")
    rows = data.get("families") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("name"), str)
                                             and isinstance(r.get("template"), str) for r in rows):
        raise InputError("a probe families file holds {families: [{name, template, description?}]}", file=path,
                         hint=f"see {SHIPPED.name} in the releasegate package")
    out = []
    for row in rows:
        try:
            compile_template(row["template"])
        except TemplateFailed as exc:
            raise InputError(f"probe family {row['name']}: {exc.message}", file=path) from None
        out.append(ProbeFamily(row["name"], row["template"], str(row.get("description", ""))))
    return out


def parse_probes(raw: dict | None, here: Path, at) -> ProbePlan | None:
    if raw is None:
        return None
    known = {f.name: f for f in _families(SHIPPED, at)}
    files = [SHIPPED]
    for i, name in enumerate(raw.get("files") or ()):
        path = (here / name).resolve()
        if not is_file(path):
            raise InputError(f"no probe families file at {path}", **at("probes", "files", i))
        known.update({f.name: f for f in _families(path, at)})
        files.append(path)
    names = raw.get("families") or list(known)
    for i, name in enumerate(names):
        if name not in known:
            raise InputError(f"unknown probe family {name!r} (known: {', '.join(known)})",
                             **at("probes", "families", i))
    return ProbePlan(dict(raw["cases"]), tuple(known[n] for n in names), tuple(files))


def _request(case) -> str:
    if case.messages is None:
        return str(case.prompt or "")
    users = [m for m in case.messages if m.get("role") == "user"]
    return str(users[-1].get("content", "")) if users else ""


def _asking(case, text: str):
    """The case with its request replaced by `text` (its last user message, or its prompt)."""
    if case.messages is None:
        return {"prompt": text}
    messages = list(case.messages)
    last = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    messages[last] = {**messages[last], "content": text}
    return {"messages": tuple(messages)}


def probe_cases(cases: list, plan: ProbePlan) -> list:
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
            out.append(dataclasses.replace(case, id=f"{case.id}~{family.name}", **_asking(case, text),
                                           tags={**case.tags, PROBE_TAG: family.name}, answer=None, format=()))
    return out


def with_probes(cases: list, plan: ProbePlan | None, *, limited: bool = False) -> list:
    """`cases` and, after them, their probes; a plan that selects no case is the user's mistake (exit 2), unless
    the cases were cut (`check --limit`)."""
    if plan is None:
        return cases
    probes = probe_cases(cases, plan)
    if not probes and not limited:
        raise InputError(f"probes.cases {plan.cases} selects no case of the suites: the probes would test nothing",
                         field="probes.cases", hint="tag the must-refuse cases (e.g. kind: must_refuse) and select them")
    return cases + probes
