"""What of a suite the run manifest hashes (see `manifest`): the bytes behind a source, the JSON Schema files
the suite names, and the record of a sampled suite's draw.

Hashing a source costs what reading its bytes costs (sha256 at several hundred MiB/s, a 1 MiB buffer), the
same as for a JSONL suite; bench/big_suites.py prints it for a 1M-row parquet file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..border.files import is_dir, read_text, walk_files
from ..border.hub import hub_snapshot
from ..border.structured import json_loads
from ..errors import InputError

if TYPE_CHECKING:
    from ..inputs.config import Config
    from ..inputs.suite_config import SuiteConfig
    from ..inputs.suites import Case
    from ..inputs.target import TargetConfig

__all__ = ["file_role", "served_files", "record_signing_digests", "SNAPSHOT_KEY", "source_files", "snapshot_commit", "schema_paths", "sample_entries"]

SNAPSHOT_KEY = "#snapshot"
"""Ends the manifest path of a hub dataset's revision (`hub:org/name@revision#snapshot`), hashed as the commit it
resolves to in the hub cache."""

Row = dict[str, Any]
"""One JSON row of manifest.json: an input {role, path, name, bytes, sha256, ...} or a directory {role, path}."""


class Add(Protocol):
    """`add(role, path, name=None)`: a file hashed into the manifest's inputs (see `manifest._adder`)."""

    def __call__(self, role: str, path: Path, name: str | None = None) -> None: ...


def source_files(suite: SuiteConfig, add: Add, inputs: list[Row], directories: list[Row]) -> None:
    """The bytes behind a suite's source: the file; every file of a save_to_disk split's directory (its arrow
    files, state.json, dataset_info.json; files added later show too); for a hub dataset, the commit its
    revision resolves to in the hub cache and every file of that snapshot."""
    src = suite.source
    if src is None:  # a JSONL suite: the file itself
        add("suite", suite.path)
        return
    if "hub" in src:
        key = f"hub:{src['hub']}@{src.get('revision') or 'main'}{SNAPSHOT_KEY}"
        commit = snapshot_commit(key)
        if commit is None:
            inputs.append({"role": "suite", "path": key, "name": suite.name, "sha256": None,
                           "note": "a hub dataset with no copy in the hub cache: not hashed"})
            return
        inputs.append({"role": "suite:revision", "path": key, "name": suite.name, "sha256": commit})
        folder = _dataset_snapshot(src["hub"], src.get("revision"))
        for _, file in directory_files(folder, "suite") if folder is not None else ():  # None: gone since
            add("suite:data", file, name=f"{suite.name}/{file.name}")
        return
    if src["format"] != "disk":
        add("suite", suite.path)
        return
    folder = Path(suite.path).parent.resolve()  # the split's directory (suite.path is its state.json)
    directories.append({"role": "suite", "path": str(folder)})
    listed = directory_files(folder, "suite")
    for role, file in listed:
        add(role, file, name=f"{suite.name}/{file.relative_to(folder)}")
    for file in _state_data_files(folder, {file for _, file in listed}):  # a hidden name the walk leaves out
        add("suite:data", file, name=f"{suite.name}/{file.name}")
    index = Path(src["path"]) / "dataset_dict.json"
    if index.is_file():
        add("suite:config", index, name=f"{suite.name}/{index.name}")


def _state_data_files(folder: Path, hashed: set[Path]) -> list[Path]:
    """The data files the split's state.json names that the directory walk did not hash (the loader refuses any
    outside the directory, see `tables.check_disk_dir`)."""
    try:
        state = json_loads(read_text(folder / "state.json", what="state.json"))
    except (InputError, ValueError, RecursionError):
        return []
    from ..inputs.tables import data_files  # a disk split's only: `gate` compares hashes, never reads a suite

    files = [f.resolve() for f in data_files(folder, state if isinstance(state, dict) else {})]
    return [f for f in files if f not in hashed and f.is_file()]


def _dataset_snapshot(hub: str, revision: str | None) -> Path | None:
    """The hub cache's snapshot of a dataset repository at `revision` (never downloads), or None."""
    return hub_snapshot(hub, repo_type="dataset", revision=revision)


def snapshot_commit(key: str) -> str | None:
    """The sha256 of the commit a `hub:org/name@revision#snapshot` key resolves to now, None when not cached."""
    hub, _, revision = key[len("hub:"): -len(SNAPSHOT_KEY)].rpartition("@")
    folder = _dataset_snapshot(hub, revision)
    return hashlib.sha256(folder.resolve().name.encode()).hexdigest() if folder is not None else None


def schema_paths(suite: SuiteConfig, base_dir: Path) -> list[Path]:
    """JSON Schema files a suite's format checks name by path (suite defaults, then, in a JSONL suite, case by
    case: its lines are read one at a time)."""
    out = [base_dir / f["schema"] for f in suite.format if isinstance(f.get("schema"), str)]
    if getattr(suite, "source", None) is not None:  # a row's case has the suite's format checks
        return out

    from ..inputs.suites import _lines  # the suite reader: building a manifest only, never comparing one

    try:
        for _, line in _lines(suite.path):
            if '"schema"' in line or '"tools_ref"' in line:  # a case's tools file is hashed as its schemas are
                out += _line_schemas(line, suite.path)
    except InputError:  # an unreadable suite is for the loader to report
        return out
    return out


def _line_schemas(line: str, path: Path) -> list[Path]:
    """The schema files one case line's format checks name, and its tools file (none for a line that is not a
    case)."""
    try:
        raw = json_loads(line)
        formats, tools = raw.get("format") or [], raw.get("tools_ref")
    except (ValueError, AttributeError, RecursionError):
        return []
    out = [path.parent / tools] if isinstance(tools, str) else []
    if not isinstance(formats, list):
        return out
    return out + [path.parent / f["schema"] for f in formats if isinstance(f, dict) and isinstance(f.get("schema"), str)]


def sample_entries(config: Config, cases: Iterable[Case]) -> list[Row]:
    """For each suite with a `sample:`: its spec, how many of its cases the run has and a digest of their ids in
    order, so that a resumed run can tell it planned the same cases."""
    sampled = {s.name: s.sample for s in config.suites if getattr(s, "sample", None)}
    ids: dict[str, list[str]] = {name: [] for name in sampled}
    for case in cases:
        if case.suite in ids:
            ids[case.suite].append(case.id)
    return [{"suite": name, "sample": spec, "cases": len(ids[name]),
             "ids_sha256": hashlib.sha256("\n".join(ids[name]).encode()).hexdigest()} for name, spec in sampled.items()]


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".ckpt", ".h5", ".msgpack", ".onnx", ".npz")


def directory_files(folder: Path, owner: str) -> list[tuple[str, Path]]:
    """Every file of a model directory with its role, hidden files and caches left out; a FIFO, a device or a
    link loop in it is an InputError naming it (`border.files.walk_files`), never a hang."""
    if not is_dir(folder):
        return []
    return [(f"{owner}:{file_role(file.name)}", file.resolve()) for file in walk_files(folder, what=f"{owner} directory")]


def file_role(name: str) -> str:
    lower = name.lower()
    if lower.endswith(WEIGHT_SUFFIXES):
        return "weights"
    if lower.endswith((".arrow", ".parquet")):
        return "data"
    if lower in TOKENIZER_FILES or lower.startswith("vocab") or lower.endswith(".tiktoken"):
        return "tokenizer"
    if lower.startswith("chat_template") or lower.endswith(".jinja"):
        return "chat_template"
    return "config" if lower.endswith(".json") else "file"


TOKENIZER_FILES = {"tokenizer.json", "tokenizer_config.json", "tokenizer.model", "special_tokens_map.json",
              "added_tokens.json", "merges.txt", "spiece.model"}


def served_files(t: TargetConfig, add: Add, inputs: list[Row], directories: list[Row]) -> None:
    """The files the server behind the endpoint loads (`target.served_files`, or those releasegate's launcher
    handed the server it started), role `served:<kind>`, each marked `served: declared | observed`."""
    first = len(inputs)
    for path in getattr(t, "served_files", ()):
        folder = Path(path).resolve()
        if folder.is_dir():
            directories.append({"role": "served", "path": str(folder)})
            for role, file in directory_files(folder, "served"):
                add(role, file, name=f"served/{folder.name}/{file.relative_to(folder)}")
        else:
            add(f"served:{file_role(folder.name)}", folder, name=f"served/{folder.name}")
    for entry in inputs[first:]:
        entry["served"] = getattr(t, "served_as", "declared")


MODEL_DIRECTORY_ROLES = ("model", "adapter", "merged", "draft", "served")
"""Directory roles whose whole directory an attestation names by its model-signing digest."""


def record_signing_digests(directories: list[Row]) -> None:
    """Each model directory's model-signing digest as the run found it (hidden files included, which its inputs
    leave out), so an attestation can tell a directory changed since the run, a file added included: run inside
    `hash_once`, the files its inputs hashed are not read again. A directory model-signing cannot hash (a link to
    a folder) records none: the attestation refuses it then in its own words."""
    from ..border.model_digest import model_files, root_digest  # a check's manifest only

    for row in directories:
        if str(row.get("role")).split(":")[0] not in MODEL_DIRECTORY_ROLES:
            continue
        try:
            row["signing_sha256"] = root_digest(model_files(Path(str(row["path"])), allow_symlinks=True))
        except InputError:
            continue
