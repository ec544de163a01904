"""One border, checked on the source: outside `releasegate.border`, no module opens a file for reading, parses
JSON or YAML, opens a socket or starts a process by its own means, except the reads listed here, each with its
reason. A new read around the border fails here (and so does a listed one that is gone: a stale list would let
the next one in unnoticed); a mutated copy of a module that reads around the border is caught. HTTP has its own
check (tests/test_border_http.py), the environment its own (tests/test_border_files.py)."""

from __future__ import annotations

import ast

from test_architecture import MODULES

CALLS = {"json": {"loads", "load"}, "yaml": {"safe_load", "load", "full_load", "unsafe_load"},
         "subprocess": {"Popen", "run", "check_output", "check_call", "call"}, "socket": {"socket", "create_connection"},
         "os": {"open", "fdopen", "popen", "system"}, "urllib.request": {"urlopen"}, "pickle": {"load", "loads"},
         "shutil": {"copyfile", "copy", "copy2", "copytree", "copyfileobj"}, "sqlite3": {"connect"},
         "asyncio": {"open_connection"}, "tempfile": {"mkstemp", "NamedTemporaryFile"}}
"""Module functions that read from outside, write a file, or run something, by their own means."""
RUN_FILES = ("run", "self")
"""Receivers of `.write_text()` that are a run directory (`RunDir.write_text`, which writes through
`border.files.replace_file`): a write elsewhere opens a file of its own, and a FIFO planted there would hold it."""

LISTED = {
    ("releasegate.backends._sse_client", ".create_connection()"):
        "the target's own streaming client: every event is read into its typed shape with byte and time bounds "
        "(backends._bounds, _events); tests/test_border_http.py lists it too",
    ("releasegate.backends._kernel_rx", "socket.socket"):
        "the same streaming client's plain-TCP connections, read with the kernel's receive stamps: the bytes go to "
        "the same bounded, typed reader (_sse_client._Response)",
    ("releasegate.export._serve", ".read_text()"): "/proc of a server process releasegate started (its memory)",
    ("releasegate.export.llamacpp", ".read_text()"): "the log of a llama.cpp child releasegate started, for its error",
    ("releasegate.export.llamacpp", "subprocess.Popen"): "the llama.cpp server releasegate serves a variant with",
    ("releasegate.export.llamacpp", ".open() for writing"):
        "the log the llama.cpp child writes, in a directory releasegate made for the run",
    ("releasegate.export.vllm", ".open() for writing"):
        "the log the vLLM child writes, in a directory releasegate made for the run",
    ("releasegate.backends._reach", "asyncio.open_connection"):
        "the target's reachability check: a connect bounded by connect_timeout_s, a first byte by stall_timeout_s, "
        "nothing of the reply read",
    ("releasegate.backends.response_cache", "sqlite3.connect"):
        "the response cache: sqlite opens the file itself, after border.files.check_regular refused a FIFO or "
        "a device there",
    ("releasegate.pipeline.mlflow_store", "sqlite3.connect"):
        "an MLflow store path promote names, opened read-only (mode=ro) for its table names only, after its first "
        "bytes were read through the border as a SQLite file's",
    ("releasegate.record.history_index", "sqlite3.connect"):
        "the run index: sqlite opens the file itself, after border.files.check_regular refused a FIFO or a device "
        "there; every row read back is checked (a plain directory name, finite numbers) or the index is rebuilt",
    ("releasegate.export.vllm", "subprocess.Popen"):
        "the vLLM server: only the interpreter RELEASEGATE_VLLM_PYTHON names or releasegate's own .venv-vllm",
    ("releasegate.export.vllm", "socket.socket"): "a free loopback port for the vLLM child",
    ("releasegate.inputs.backend_facts", ".read_text()"): "the package's own backends.json (importlib.resources)",
    ("releasegate.inputs.backend_facts", "json.loads"): "the package's own backends.json",
    ("releasegate.inputs.schema_check", ".read_text()"): "the package's own JSON Schemas (importlib.resources)",
    ("releasegate.inputs.schema_check", "json.loads"): "the package's own JSON Schemas",
    ("releasegate.inputs.scaffold", "yaml.safe_load"): "the scaffold's own template text, checked as it is written",
    ("releasegate.inputs.tables", ".open()"): "a member of an .xlsx read by openpyxl after border.files checked the file",
    ("releasegate.record.judge_journal", ".open()"): "judgments.jsonl's torn tail cut (r+b), checked regular first",
    ("releasegate.record.run_lock", ".open()"): "the run's lock file (a+: never read, only locked)",
    ("releasegate.backends._starvation", "os.open"):
        "/proc/self/task/*/schedstat: this process's own threads' run-queue wait (the hf backend's lateness)",
    ("releasegate.record.journal_lines", ".open()"):
        "a journal's torn last line mended (r+b) before an append, checked regular first",
    ("releasegate.record.stage_timing", "open()"): "/proc/self/stat and /proc/uptime: this process's own CPU time",
    ("releasegate.redaction", "json.loads"):
        "a journal line releasegate itself just serialised, decoded to redact its strings (ground layer: no border)",
    ("releasegate.run.manifest", "yaml.safe_load"): "the rubric's text read by border.files.read_text, already "
                                                    "validated by load_rubric in the same run",
    ("releasegate.run.sweep", "yaml.safe_load"): "the sealed rubric snapshot read by border.files.read_text, bounded",
    ("releasegate.scorers.stored", ".read_bytes()"): "the package's own scorer sources, hashed into a fingerprint",
    ("releasegate.scorers.shipped_metrics", "json.loads"):
        "field_accuracy parses the outputs given to it (a RecursionError is no object), as its `evaluate` script does",
    ("releasegate.testing.hostile", "json.loads"): "the test stub's own request bodies",
    ("releasegate.testing.stub_server", "json.loads"): "the test stub's own request bodies",
    ("releasegate.testing.composition_labels", ".open()"): "the composition matrix reads the review CSV it exported",
    ("releasegate.testing.composition_labels", ".open() for writing"): "the composition matrix fills its review CSV",
    ("releasegate.testing.composition", ".write_text()"): "the composition matrix writes its own fixture projects",
    ("releasegate.text", "json.loads"):
        "loads_json, the parser the border's json_reader and the stream events call after their bounds",
    ("releasegate.report.compare", ".read_text()"): "the package's own report.css",
    ("releasegate.report.html", ".read_text()"): "the package's own templates",
    ("releasegate.report.variants", ".read_text()"): "the package's own report.css",
    ("releasegate.report.trend", ".read_text()"): "the package's own report.css",
}


def _mode(call: ast.Call, position: int) -> str:
    for keyword in call.keywords:
        if keyword.arg == "mode" and isinstance(keyword.value, ast.Constant):
            return str(keyword.value.value)
    if len(call.args) > position and isinstance(call.args[position], ast.Constant):
        return str(call.args[position].value)
    return "r"


def _writes(call: ast.Call, position: int) -> bool:
    mode = _mode(call, position)
    return any(c in mode for c in "wax") and "+" not in mode


def reads(source: str) -> set[str]:
    """The reads (and writes) around the border in `source`: `open()` and `.open()` for reading, or for writing
    ("open() for writing"), `.read_text()`, `.read_bytes()`, `.write_text()` and `.write_bytes()` but a run
    directory's, `.create_connection()`, and the module functions of CALLS."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id == "open":
            found.add("open() for writing" if _writes(node, 1) else "open()")
        elif isinstance(f, ast.Attribute):
            base = ast.unparse(f.value)
            if base in CALLS:
                if f.attr in CALLS[base]:
                    found.add(f"{base}.{f.attr}")
            elif f.attr == "open":
                found.add(".open() for writing" if _writes(node, 0) else ".open()")
            elif f.attr in ("read_text", "read_bytes", "create_connection"):
                found.add(f".{f.attr}()")
            elif f.attr in ("write_text", "write_bytes") and base not in RUN_FILES:
                found.add(f".{f.attr}()")
    return found


def _outside_border() -> dict[str, set[str]]:
    return {name: found for name, (path, _) in MODULES.items()
            if not name.startswith("releasegate.border") and (found := reads(path.read_text("utf-8")))}


def test_no_module_reads_around_the_border():
    found = {(name, what) for name, whats in _outside_border().items() for what in whats}
    assert found - set(LISTED) == set(), "read through releasegate.border, or list it here with its reason"
    assert set(LISTED) - found == set(), "a listed read is gone: take it off the list"


def test_a_module_that_reads_around_the_border_is_caught():
    """The check can fail: each way a surface once read around the border, put into a copy of a module."""
    source = MODULES["releasegate.pipeline.regate"][0].read_text("utf-8")
    for line, expected in [
        ('    return json.loads((run_path / "report.json").read_text("utf-8"))\n', {"json.loads", ".read_text()"}),
        ('    return hashlib.sha256(path.read_bytes()).hexdigest()\n', {".read_bytes()"}),
        ('    with open(path) as fh:\n        return fh.read()\n', {"open()"}),
        ('    with path.open("rb") as fh:\n        return fh.read()\n', {".open()"}),
        ('    return yaml.safe_load(text)\n', {"yaml.safe_load"}),
        ('    return subprocess.run([".venv-vllm/bin/python"])\n', {"subprocess.run"}),
        ('    (path.parent / ".tmp").write_text(text)\n', {".write_text()"}),
        ('    with path.open("a") as fh:\n        fh.write(text)\n', {".open() for writing"}),
        ('    shutil.copyfile(path, run_path)\n', {"shutil.copyfile"}),
    ]:
        mutated = source + "\n\ndef _around(run_path, path, text):\n" + line
        assert expected <= reads(mutated) - reads(source), line


def test_a_write_around_the_border_is_seen_and_a_run_directorys_is_not():
    writes = 'with open(p, "w") as f:\n    pass\nwith p.open("a") as f:\n    pass\np.write_text("x")\n'
    assert reads(writes) == {"open() for writing", ".open() for writing", ".write_text()"}
    assert reads('run.write_text("report.md", text)\nself.write_text(name, text)\n') == set()
    assert reads('with p.open("r+b") as f:\n    pass\n') == {".open()"}  # reads too
