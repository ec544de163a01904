"""The house plan, checked on the source: no import cycles, imports at module top, small modules, thin commands,
one exit-code table. Read from the AST of src/releasegate, so a violation fails here before any review does."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT, load_script

PACKAGE = ROOT / "src" / "releasegate"
MAX_LINES = 400

HEAVY = frozenset({
    "torch", "transformers", "peft", "tokenizers", "safetensors", "accelerate", "datasets", "evaluate", "pyarrow",
    "pandas", "numpy", "matplotlib", "jinja2", "markupsafe", "ray", "gguf", "openai", "httpx", "huggingface_hub",
    "yaml", "jsonschema", "referencing", "pydantic", "sacrebleu", "rouge_score", "nltk", "xllamacpp", "uvloop",
    "rich", "fcntl", "vllm", "scipy",
    "cryptography", "securesystemslib",  # signing: 60 ms, loaded by what signs or checks a key, not by every gate
    "asyncio",  # the standard library's, but 30 ms: only what runs an event loop imports it
})
"""Third-party (or platform) modules a function may import where it needs them: optional, or slow to import, so
`releasegate --help` and `validate` stay fast and a run loads only the machinery its config asks for."""

LAZY_LIBRARY = {
    # module -> the releasegate modules it imports inside a function, and why
    "releasegate.report.formats": {"releasegate.report.html"},  # jinja2 and matplotlib load only for the HTML report
    # gguf loads only to export, and `python -m releasegate.export.gguf` must not find itself imported already
    "releasegate.export": {"releasegate.export.gguf"},
    # the entry point answers Ctrl-C before it imports the command line, which takes a second or more
    "releasegate.__main__": {"releasegate.cli"},
    # a what-if re-derives the cache probe, whose stage reaches the embedding backends; a plain `gate` imports
    # no backend (tests/test_command_imports.py)
    "releasegate.pipeline.regate": {"releasegate.run.cache_probe_stage"},
    # `report` judges a run again only when nothing seals it and it says PASS (`vouched_report`)
    "releasegate.pipeline.vouched_report": {"releasegate.pipeline.regate"},
    # the suite reader, a disk split's table files and model signing serve building a check's manifest; `gate`
    # only compares the stored hashes (`manifest.compare_manifest`), and imports none of them
    # the tool-calling scorer and its specs' models load with the first case that offered tools
    "releasegate.scorers.score": {"releasegate.scorers.tool_calls"},
    "releasegate.run.manifest_inputs": {"releasegate.inputs.suites", "releasegate.inputs.tables",
                                        "releasegate.border.model_digest"},
    # the view models of a load phase, a prefix-cache probe, the response-cache probe's embeddings and a guard load
    # when a report shows that section; a run without one (the demo's `gate`) never builds them
    "releasegate.report.formatting": {"releasegate.report.run_models"},
    "releasegate.report.capacity_section": {"releasegate.report.run_models"},
    "releasegate.report.cache_probe_section": {"releasegate.report.run_models"},
    "releasegate.report.judge_section": {"releasegate.report.run_models"},
    # a run's leakage figures (9 models) load when it has a leakage probe; the feature is registered for every gate
    "releasegate.leakage.feature": {"releasegate.leakage.figures"},
    # httpx (published as httpx2, chosen in `_http`) loads only with the `openai` package's client: an endpoint check
    # through the lean client (the default) and a check on hf never import it (tests/test_command_imports.py)
    "releasegate.backends._openai_client": {"releasegate.backends._http"},
    "releasegate.backends._retry": {"releasegate.backends._http"},
}
"""Function-level imports of releasegate's own modules outside the CLI: each one listed, with its reason."""

CLI = "releasegate.cli"
"""Command modules import the library inside the command body: `--help` lists every command without importing
pydantic, numpy or the run machinery (tests/test_cli.py checks what it imports). That is the CLI's one exception."""


def modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


MODULES = modules()


def imports(name: str) -> list[tuple[str, int, bool, bool]]:
    """(imported module, line, inside a function, under `if TYPE_CHECKING`) for every import in module `name`;
    `from package import submodule` counts as importing the submodule."""
    path, is_package = MODULES[name]
    found = []

    def target(node: ast.ImportFrom) -> list[str]:
        if node.level == 0:
            base = node.module
        else:
            parts = name.split(".") if is_package else name.split(".")[:-1]
            parts = parts[: len(parts) - node.level + 1]
            base = ".".join(parts + ([node.module] if node.module else []))
        return [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]

    def visit(node: ast.AST, in_function: bool, typing_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend((a.name, child.lineno, in_function, typing_only) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                found.extend((t, child.lineno, in_function, typing_only) for t in target(child))
            function = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            guard = isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)
            visit(child, in_function or function, typing_only or guard)

    visit(ast.parse(path.read_text("utf-8")), False, False)
    return found


def own(module: str) -> str | None:
    """The releasegate module an import resolves to (a name imported from a module: that module)."""
    while module and module not in MODULES:
        module = module.rpartition(".")[0]
    return module or None


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for name in MODULES:
        for imported, _, _, typing_only in imports(name):
            target = own(imported) if imported.startswith("releasegate") else None
            if target and target != name and not typing_only:
                graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


LAYERS = [
    "ground",     # the top-level modules: errors, text, redaction, outputs, spreadsheet, clock, extras, ...
    "border",     # every read from outside: HTTP replies, files, stored run files, the command line, the environment
    "testing",    # the stub server and its hostile modes (imports nothing of the product)
    "stats",      # intervals, tests, cluster bounds, sample weights: no knowledge of runs
    "record",     # everything a run directory persists, typed, and the rules for reading it
    "decision",   # every verdict, exit code, non-inferiority, choice and recommendation, from typed evidence
    "inputs",     # config, suites, rubric, judge settings and templates, review policy
    "backends",   # the model under test (and the judge) behind one interface; the response cache
    "scorers",    # one score per case
    "scale",      # the declared load as requests; Ray workers
    "export",     # GGUF and server launchers for a model
    "gate",       # the gate's rules: criteria, run health, capacity, comparability, paired comparisons
    "run",        # execution: generation, the load phase, sweeps, probes, the manifest
    "leakage",    # what a fine-tune memorised: the leakage suite, its probes against the base, its gate feature
    "review",     # the human review sample, CSV and summary
    "llm_judge",  # the LLM judge stage, its calibration and what it means for the verdict
    "report",     # every rendering of a gate report, comparison, sweep or review
    "pipeline",   # the commands' work: check, gate, matrix, compare, servers, verify
    "cli",        # parse options, call the pipeline, print
]
"""The package layers, bottom to top: a module imports only modules of its own package or of a package below
it (typing-only and function-level imports included), so the package graph has no cycle by construction."""


def layer_of(module: str) -> str:
    """A module's package (`releasegate.gate.criteria` -> gate); the top-level modules are `ground`, except
    `__main__`, which is the CLI's entry."""
    parts = module.split(".")
    if parts[1:] == ["__main__"]:
        return "cli"
    if len(parts) == 1 or (len(parts) == 2 and not MODULES[module][1]):
        return "ground"
    return parts[1]


def test_every_package_has_a_layer():
    assert {layer_of(m) for m in MODULES} == set(LAYERS)


def layer_violations() -> list[str]:
    rank = {name: i for i, name in enumerate(LAYERS)}
    wrong = []
    for name in MODULES:
        for imported, line, _, _ in imports(name):
            target = own(imported) if imported.startswith("releasegate") else None
            if target and rank[layer_of(target)] > rank[layer_of(name)]:
                wrong.append(f"{MODULES[name][0].relative_to(ROOT)}:{line} ({layer_of(name)}) imports {target} "
                             f"({layer_of(target)}, a layer above)")
    return wrong


def test_no_import_against_the_layer_order():
    assert layer_violations() == []


def test_the_layer_rule_sees_a_violation(monkeypatch):
    """The rule can fail: the same check with record/ and pipeline/ swapped finds imports."""
    swapped = [{"record": "pipeline", "pipeline": "record"}.get(x, x) for x in LAYERS]
    monkeypatch.setattr(__import__(__name__), "LAYERS", swapped)
    assert any("(pipeline) imports" in w for w in layer_violations())


def test_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    """A cycle is broken today by moving an import into a function and breaks again when someone moves it back;
    none is allowed, typing-only imports aside (they never run)."""
    assert cycles(import_graph()) == []


def test_function_level_imports_are_only_heavy_dependencies():
    wrong = []
    for name in MODULES:
        for imported, line, in_function, typing_only in imports(name):
            if not in_function or typing_only:
                continue
            if imported.startswith("releasegate"):
                allowed = name.startswith(CLI + ".") or own(imported) in LAZY_LIBRARY.get(name, ())
            else:
                allowed = imported.split(".")[0] in HEAVY
            if not allowed:
                wrong.append(f"{MODULES[name][0].relative_to(ROOT)}:{line} imports {imported} inside a function")
    assert wrong == []


GENERATED = {"releasegate.inputs.shipped_checks", "releasegate.report.report_page"}
"""Modules a script writes (scripts/compile_schemas.py, scripts/compile_templates.py) and a test keeps current: read
by no one, edited by no one."""


def test_no_module_over_400_lines():
    long = {str(path.relative_to(ROOT)): n for name, (path, _) in MODULES.items()
            if name not in GENERATED and (n := len(path.read_text("utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_lazy_library_imports_listed_still_exist():
    """A listed exception that is gone is a stale list: it would let the next one in unnoticed."""
    for name, targets in LAZY_LIBRARY.items():
        lazy = {own(i) for i, _, in_function, _ in imports(name) if in_function and i.startswith("releasegate")}
        assert targets <= lazy, name


COMMAND_MODULES = sorted(n for n in MODULES if n.startswith(CLI + ".") and not n.rpartition(".")[2].startswith("_")
                         and n != f"{CLI}.app")


@pytest.mark.parametrize("name", COMMAND_MODULES)
def test_commands_only_parse_options_and_print(name):
    """A command module holds commands and what prints their result; the work is a library call. Signs of logic
    that belongs in the library: a run's records read, a file written (`--output` goes through
    `_common.write_output`), a class other than an option's choices, or a long helper."""
    tree = ast.parse(MODULES[name][0].read_text("utf-8"))
    problems = [f"class {node.name}" for node in tree.body if isinstance(node, ast.ClassDef)
                and not any(ast.unparse(b) in ("StrEnum", "Enum") for b in node.bases)]  # option choices are fine
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "write_text", "write_json", "write_bytes", "unlink", "mkdir", "read_records"):
            problems.append(f"line {node.lineno}: .{node.func.attr}() (files are the library's)")
    helpers = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("_")]
    problems += [f"{f.name}: {f.end_lineno - f.lineno + 1} lines" for f in helpers if f.end_lineno - f.lineno >= 15]
    assert problems == []


def test_every_exception_maps_to_one_exit_code():
    """The CLI's one table from exception class to exit code: the library's errors keep their own codes, and
    anything else (a bug) has a row, so nothing reaches the user as a traceback."""
    from releasegate.cli.app import EXIT_TABLE, INTERNAL_ERROR
    from releasegate.errors import InputError, ReleasegateError, TargetError

    classes = [row[0] for row in EXIT_TABLE]
    assert classes[0] is ReleasegateError and classes[-1] is Exception
    assert EXIT_TABLE[-1][1] == INTERNAL_ERROR not in (0, 1, 2, 3, 4, 130)
    for i, cls in enumerate(classes):  # a class after one of its bases would never be reached
        assert not any(issubclass(cls, earlier) for earlier in classes[:i]), cls
    assert (InputError.exit_code, TargetError.exit_code) == (2, 4)


def _validate_raising(monkeypatch, capsys, exc: BaseException) -> tuple[int, str]:
    import releasegate.inputs.validation as validation
    from releasegate.cli import main

    def broken(*args, **kwargs):
        raise exc

    monkeypatch.setattr(validation, "load_inputs", broken)
    code = main(["validate", "-c", str(ROOT / "releasegate.yaml")])
    return code, capsys.readouterr().err


def test_a_bug_is_one_line_and_its_own_exit_code(monkeypatch, capsys):
    """A library bug (TypeError, KeyError...) reads as an internal error, not as a failed gate, and never as a
    traceback; a secret in its message is masked like any other error line."""
    from releasegate.cli.app import INTERNAL_ERROR

    code, err = _validate_raising(monkeypatch, capsys, KeyError("api_key=sk-live-0123456789abcdef"))
    assert code == INTERNAL_ERROR
    assert err.startswith("error: internal error: KeyError:") and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err and "0123456789abcdef" not in err


def test_a_traceback_only_when_asked(monkeypatch, capsys):
    from releasegate.cli.app import INTERNAL_ERROR, TRACEBACK_ENV

    monkeypatch.setenv(TRACEBACK_ENV, "1")
    code, err = _validate_raising(monkeypatch, capsys, TypeError("unsupported operand"))
    assert code == INTERNAL_ERROR and "Traceback" in err and "TypeError: unsupported operand" in err


def test_a_file_that_cannot_be_read_or_written_is_exit_2_naming_it(monkeypatch, capsys):
    code, err = _validate_raising(monkeypatch, capsys, PermissionError(13, "Permission denied", "/data/suite.jsonl"))
    assert code == 2
    assert err.strip().splitlines() == [
        "error: /data/suite.jsonl: Permission denied (check the path, its permissions and the free space)"]


def test_request_errors_are_error_kinds_not_loose_strings():
    """Every kind of failed request is an ErrorKind member (or `http_kind` / `judge_kind`): a string literal as a
    record's `error`, or compared with one, is a kind no table, report or docs page lists."""
    loose = []
    for path, _ in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.keyword) and node.arg == "error" and isinstance(node.value, (ast.Constant, ast.JoinedStr)):
                if isinstance(node.value, ast.JoinedStr) or isinstance(node.value.value, str):
                    loose.append(f"{path.relative_to(ROOT)}:{node.value.lineno} error={ast.unparse(node.value)}")
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and node.left.attr == "error":
                strings = [c for c in node.comparators if isinstance(c, ast.Constant) and isinstance(c.value, str)]
                loose += [f"{path.relative_to(ROOT)}:{node.lineno} .error compared with {c.value!r}" for c in strings]
    assert loose == []


PRIVATE_ACROSS = {
    # (importing module, private name) -> why it is shared
    ("releasegate.run.manifest_inputs", "releasegate.inputs.suites._lines"):
        "the manifest hashes a suite's lines with the reader that parses them (tests call it under this name)",
}
"""Private names (`_x`, or anything of a `_module`) one package takes from another: each listed, with its reason."""


def private_imports() -> set[tuple[str, str]]:
    found = set()
    for name, (path, is_package) in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                parts = name.split(".") if is_package else name.split(".")[:-1]
                base = parts[: len(parts) - node.level + 1] + (node.module.split(".") if node.module else [])
            else:
                base = (node.module or "").split(".")
            if base[0] != "releasegate" or base[:2] == name.split(".")[:2]:
                continue  # within one package, private machinery is what packages are for
            for alias in node.names:
                parts = base[1:] + [alias.name]
                if any(p.startswith("_") and not p.startswith("__") for p in parts):
                    found.add((name, ".".join(base + [alias.name])))
    return found


def test_packages_share_only_public_names():
    assert private_imports() == set(PRIVATE_ACROSS)


def _build_schemas():
    """scripts/build_schemas.py, the one writer of the schema parts that mirror a registry."""
    return load_script("build_schemas")


def test_schema_enums_are_the_registries():
    """The shipped schemas name exactly the registered backends and scorer types, and the fields each backend
    requires; `validate` reads the files, so a backend or scorer registered without a rebuild fails here."""
    import json

    from releasegate.backends import BACKENDS
    from releasegate.scorers import SCORERS

    schemas = PACKAGE / "schemas"
    config = json.loads((schemas / "config.schema.json").read_text("utf-8"))
    case = json.loads((schemas / "case.schema.json").read_text("utf-8"))
    target = config["properties"]["target"]
    assert set(target["properties"]["backend"]["enum"]) == set(BACKENDS)
    required = {rule["if"]["properties"]["backend"]["const"]: set(rule["then"]["required"]) for rule in target["allOf"]}
    assert required == {name: set(e.spec.required) for name, e in BACKENDS.items() if e.spec.required}
    for family in ("answer", "format"):
        assert set(case["$defs"][family]["properties"]["type"]["enum"]) == {t for f, t in SCORERS if f == family}
    # the judge names its backend by the target's enum, so it cannot drift either
    assert config["properties"]["judge"]["properties"]["backend"] == {"$ref": "#/properties/target/properties/backend"}


def test_shipped_schemas_are_built_from_the_registries():
    """backends.json (the registry as the config layer reads it) and the schemas are what the script writes."""
    from releasegate.backends import BACKENDS
    from releasegate.inputs import backend_facts

    assert _build_schemas().stale() == []
    assert {name: backend_facts.spec(name) for name in backend_facts.backend_names()} == {
        name: e.spec for name, e in BACKENDS.items()}


def test_the_schema_build_sees_a_new_backend_and_scorer(monkeypatch):
    """The check can fail: a backend or scorer type registered after the build makes the shipped files stale."""
    from releasegate.backends import BACKENDS, BackendEntry
    from releasegate.inputs.backend_facts import BackendSpec
    from releasegate.scorers import SCORERS

    build = _build_schemas()
    monkeypatch.setitem(BACKENDS, "vllm_direct", BackendEntry(BackendSpec("vllm_direct", "vLLM in process",
                                                                           required=("base",)), "x:Y"))
    monkeypatch.setitem(SCORERS, ("answer", "wer"), lambda *a: None)
    files = build.expected()
    assert set(build.stale()) == {"backends.json", "config.schema.json", "case.schema.json"}
    import json

    target = json.loads(files["config.schema.json"])["properties"]["target"]
    assert target["properties"]["backend"]["enum"][-1] == "vllm_direct"
    assert "vllm_direct: vLLM in process" in target["properties"]["backend"]["description"]
    assert {"if": {"properties": {"backend": {"const": "vllm_direct"}}}, "then": {"required": ["base"]}} in target["allOf"]
    assert "wer" in json.loads(files["case.schema.json"])["$defs"]["answer"]["properties"]["type"]["enum"]


def test_the_report_commands_format_choices_are_the_registry():
    """`report --format` offers exactly the registered formats: a format registered in report/formats.py and not
    offered, or offered and not registered, fails here (the CLI spells them out so `--help` imports no report)."""
    from releasegate.cli.report import Format
    from releasegate.report import REGISTRY

    assert sorted(f.value for f in Format) == sorted(REGISTRY)


@pytest.mark.parametrize(("command", "renders"), [("compare", "releasegate.report.compare:COMPARE_FORMATS"),
                                                  ("servers", "releasegate.report.servers:SERVERS_FORMATS")])
def test_the_comparison_commands_format_choices_are_what_their_renderer_renders(command, renders):
    import importlib

    module, _, name = renders.partition(":")
    choices = importlib.import_module(f"releasegate.cli.{command}").Format
    assert sorted(f.value for f in choices) == sorted(getattr(importlib.import_module(module), name))


GATE_PATH = ("releasegate.pipeline.gate", "releasegate.gate.context", "releasegate.gate.feature")
MAX_PARAMETERS, MAX_GATE_LINES = 8, 60


def _feature_code(name: str) -> bool:
    """The commands' pipeline and the gate features: where typed objects, not long argument lists, carry a run."""
    return name.startswith("releasegate.pipeline.") or name.endswith("_feature") or name.endswith(".feature") \
        or name in GATE_PATH


def _functions(path):
    tree = ast.parse(path.read_text("utf-8"))
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _parameters(node) -> int:
    a = node.args
    names = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    extra = (a.vararg is not None) + (a.kwarg is not None)
    return len([n for n in names if n.arg not in ("self", "cls")]) + extra


def test_pipeline_and_feature_functions_take_at_most_eight_parameters():
    wrong = [f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name} takes {_parameters(fn)}"
             for name, (path, _) in MODULES.items() if _feature_code(name)
             for fn in _functions(path) if _parameters(fn) > MAX_PARAMETERS]
    assert wrong == []


def test_the_gate_path_has_no_function_over_sixty_lines():
    """The gate is a short loop over the features (`pipeline.gate.judge_run`); none of its functions grows into a
    crossroads again."""
    wrong = [f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name} is {fn.end_lineno - fn.lineno + 1} lines"
             for name, (path, _) in MODULES.items()
             if name in GATE_PATH or name.endswith("_feature") or name.endswith(".feature")
             for fn in _functions(path) if fn.end_lineno - fn.lineno + 1 > MAX_GATE_LINES]
    assert wrong == []
    judge = next(fn for fn in _functions(MODULES["releasegate.pipeline.gate"][0]) if fn.name == "judge_run")
    assert judge.end_lineno - judge.lineno + 1 < 40
