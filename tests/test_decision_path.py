"""One decision path, checked on the source: outside `releasegate.decision` no module makes a verdict (a verdict
name in any place but a comparison, a mapping's key or a type), looks up an exit code from a verdict, returns a
conditional exit code, or writes a choice, a recommendation or an exit code into a result. Read from the AST of
src/releasegate, so a new surface that decides on its own fails here before any review does."""

from __future__ import annotations

import ast

from test_architecture import MODULES, ROOT

VERDICTS = frozenset({"PASS", "FAIL", "NEEDS_REVIEW", "INCONCLUSIVE", "TARGET_ERROR"})
DECIDED_KEYS = frozenset({"exit_code", "choice", "recommended", "recommendation"})
"""Result keys only a decision fills (a result carries them through `Decision.as_dict` / `Choice.as_dict`)."""
DECIDERS = frozenset({"EXIT_CODES", "RANK", "worst", "decision", "Decision"})
"""Names of the decision module that make a verdict or an exit code: used nowhere else."""
DECISION = "releasegate.decision"


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _allowed_verdict_literal(node: ast.Constant, parents: dict) -> bool:
    """A verdict name read, not made: in a comparison, as a mapping's key, in a type (`Literal[...]`), or a
    docstring."""
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.Compare):
            return True
        if isinstance(parent, ast.Dict) and any(k is child for k in parent.keys):
            return True
        if isinstance(parent, ast.Subscript) and ast.unparse(parent.value).endswith("Literal"):
            return True
        if isinstance(parent, ast.Expr):
            return True
        if isinstance(parent, (ast.Assign, ast.AugAssign)) and "__all__" in ast.unparse(parent).split("=")[0]:
            return True  # the names a module exports
        if not isinstance(parent, (ast.Tuple, ast.List, ast.Set)):
            return False
        child, parent = parent, parents.get(parent)
    return False


def decision_violations(source: str, where: str) -> list[str]:
    tree = ast.parse(source)
    parents = _parents(tree)
    found = []
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Constant) and node.value in VERDICTS and not _allowed_verdict_literal(node, parents):
            found.append(f"{line} makes the verdict {node.value!r}")
        elif isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and k.value in DECIDED_KEYS]
            found += [f"{line} writes {k!r} into a result" for k in keys]
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) and \
                        target.slice.value in DECIDED_KEYS | {"verdict"}:
                    found.append(f"{line} sets {target.slice.value!r}")
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.lstrip(".").startswith("decision"):
            found += [f"{line} imports {a.name}" for a in node.names if a.name in DECIDERS]
        elif isinstance(node, ast.ImportFrom) and node.module and "decision" in node.module.split("."):
            found += [f"{line} imports {a.name}" for a in node.names if a.name in DECIDERS]
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.IfExp) and all(
                isinstance(v, ast.Constant) and isinstance(v.value, int) for v in (node.value.body, node.value.orelse)):
            found.append(f"{line} returns a conditional exit code")
    return sorted(set(found))


EXPECTATIONS = frozenset({"releasegate.testing.composition"})
"""Test fixtures that state the verdict a fixture's truth expects (compared with what the gate decided), never one
a release gets."""


def _outside_decision() -> dict[str, str]:
    return {name: path.read_text("utf-8") for name, (path, _) in MODULES.items()
            if not name.startswith(DECISION + ".") and name != DECISION and name not in EXPECTATIONS}


def test_no_module_outside_the_decision_module_decides():
    wrong = []
    for name, source in _outside_decision().items():
        wrong += decision_violations(source, str(MODULES[name][0].relative_to(ROOT)))
    assert wrong == []


MUTATIONS = [
    ('    verdict = "PASS" if choice["choice"] else "INCONCLUSIVE"\n', "makes the verdict 'PASS'"),
    ('    result = {"verdict": v, "exit_code": EXIT_CODES[v]}\n', "writes 'exit_code'"),
    ('    row["choice"] = rows[0]["variant"]\n', "sets 'choice'"),
    ('    return 0 if comparison["recommended"] else 3\n', "returns a conditional exit code"),
    ('    return max(verdicts, key=lambda v: ("PASS", "FAIL").index(v))\n', "makes the verdict 'PASS'"),
]


def test_a_surface_that_decides_on_its_own_is_caught():
    """The check can fail: each way the served variants, servers and matrix once decided on their own, put back
    into a copy of a pipeline module, is found."""
    source = MODULES["releasegate.pipeline.served_variants"][0].read_text("utf-8")
    for line, expected in MUTATIONS:
        mutated = source + "\n\ndef _decides(choice, rows, verdicts, v, comparison, row):\n" + line
        assert any(expected in w for w in decision_violations(mutated, "mutated.py")), line
    imported = "from ..decision.verdicts import EXIT_CODES\n" + source
    assert any("imports EXIT_CODES" in w for w in decision_violations(imported, "mutated.py"))


def test_reading_a_verdict_is_not_deciding():
    allowed = ('if report["verdict"] == "PASS":\n    pass\n'
               'COLOURS = {"PASS": "green", "FAIL": "red"}\n'
               'ok = verdict in ("PASS", "NEEDS_REVIEW")\n'
               'Verdict = Literal["PASS", "FAIL"]\n')
    assert decision_violations(allowed, "reader.py") == []


def criterion_result_violations(source: str, where: str) -> list[str]:
    """A `CriterionResult(...)` made outside `decision/`: a criterion's verdict decided on its own."""
    tree = ast.parse(source)
    return [f"{where}:{node.lineno} builds a CriterionResult" for node in ast.walk(tree)
            if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "CriterionResult"]


def test_only_the_decision_module_builds_a_criterion_verdict():
    wrong = []
    for name, source in _outside_decision().items():
        wrong += criterion_result_violations(source, str(MODULES[name][0].relative_to(ROOT)))
    assert wrong == []


def test_a_criterion_verdict_built_elsewhere_is_caught():
    mutated = 'def f(c, v):\n    return CriterionResult(c, v, "pass", "")\n'
    assert criterion_result_violations(mutated, "m.py") == ["m.py:2 builds a CriterionResult"]
    assert criterion_result_violations("def f(r):\n    return r.undecided('why', cause)\n", "m.py") == []
