"""manifest.json read back: a bounded read through the border and the shape releasegate writes, checked.

The manifest is a file on disk like any other: an edit that leaves it valid JSON but of another shape (the seal's
`files` a string, a hash a number, `inputs` an object, NaN for a byte count) would otherwise surface as an
internal error in `gate`, `report`, `verify` or `check --resume`, or, worse, read as "no seal" and let an edited
run through. So every reader takes it from here: missing is None (a run that predates manifests), any other
shape is refused with one line naming the field (exit 2). The seal's readers check the seal (`SealOnly`: a run
built by hand may hold a bare `{}`), `verify` and `check --resume` the whole manifest (`ManifestShape`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import ConfigDict, Field

from ..border.files import exists, read_text
from ..border.structured import json_loads
from ..errors import InputError
from ..model_base import Model
from .run_parts import Count, finite_tree, problem_line

__all__ = ["MANIFEST_FILE", "MAX_MANIFEST_BYTES", "read_manifest_file", "check_manifest", "Manifest", "typed_manifest",
           "typed_inputs", "typed_files", "typed_parts", "ManifestParts", "ManifestFiles", "InputEntry", "DirectoryEntry", "Seal", "SealedFile", "BrokenEntry"]

MANIFEST_FILE = "manifest.json"
MAX_MANIFEST_BYTES = 64 * 1024 * 1024  # a hub snapshot of thousands of files hashes to a few MiB


class _Shape(Model):
    model_config = ConfigDict(extra="allow")


_M = TypeVar("_M", bound=_Shape)


class InputEntry(_Shape):
    path: str
    role: str
    name: str | None = None
    sha256: str | None = None
    bytes: Count | None = None
    served: str | None = None
    """How a served file was known: 'observed' (releasegate's launcher handed it over) or 'declared'."""

    @property
    def owner(self) -> str:
        """The role before ':' (`model` of `model:weights`)."""
        return self.role.split(":", 1)[0]

    @property
    def shown_name(self) -> str:
        """The name the entry is shown and attested by: its name, else its path."""
        return self.name or self.path


Sha256 = Annotated[str, Field(pattern="^[0-9a-f]{64}$")]


class DirectoryEntry(_Shape):
    role: str
    path: str
    signing_sha256: Sha256 | None = None
    """The digest OpenSSF model-signing names the whole directory by, hidden files included, when the run read it."""


class TargetFacts(_Shape):
    fingerprint: str | None = None
    backend: str | None = None


class SealedFile(_Shape):
    bytes: Count  # the fields in the order releasegate writes them (`record.seal`)
    sha256: str
    load_phase_running: bool | None = None


class BrokenEntry(_Shape):
    file: str
    change: str
    found_by: str | None = None
    found_at: str | None = None
    sealed_sha256: str | None = None


class Seal(_Shape):
    files: dict[str, SealedFile]
    broken: list[BrokenEntry] = []
    at: str | None = None
    by: str | None = None
    complete: bool | None = None


class OverrideEntry(_Shape):
    key: str
    by: str


class Composition(_Shape):
    """How the config was composed (`run.manifest._composition`): its readers walk `set` and `over_official`."""

    extends: list[str] | None = None
    set: list[dict[str, Any]] | None = None
    over_official: list[OverrideEntry] | None = None


class SealOnly(_Shape):
    """The seal, and the few parts the seal's readers read besides it (history, the rubric binding): a part of
    another shape (`inputs` a number, `composition.set` a string) is refused, never an internal error."""

    sealed: Seal | None = None
    inputs: list[dict[str, Any]] | None = None
    target: dict[str, Any] | None = None
    composition: Composition | None = None


class SampleEntry(_Shape):
    """A sampled suite's draw: its `sample:` spec and a digest of the drawn case ids."""

    suite: str
    ids_sha256: str
    sample: Any = None


class ManifestShape(_Shape):
    format: int
    inputs: list[InputEntry]
    directories: list[DirectoryEntry] = []
    target: TargetFacts
    packages: dict[str, str] = {}
    samples: list[SampleEntry] = []
    sealed: Seal | None = None
    composition: Composition | None = None
    judge: dict[str, Any] | None = None
    guards: dict[str, Any] | None = None
    """The judge's and each guard's files (`run.manifest.grader_inputs`, which `verify` and a re-gate hash)."""


class Manifest(ManifestShape):
    """manifest.json as releasegate writes it, for its readers to use by attribute (`typed_manifest`)."""


class ManifestFiles(_Shape):
    """The files of a manifest, or of a part built like one (a grader's files, the case files alone)."""

    inputs: list[InputEntry] = []
    directories: list[DirectoryEntry] = []


class ManifestParts(ManifestFiles):
    """The parts of a manifest an attestation carries, each optional (a manifest built by hand may lack any)."""

    target: TargetFacts | None = None
    packages: dict[str, str] | None = None
    sealed: Seal | None = None


def typed_parts(data: dict[str, Any], path: Path | None = None) -> ManifestParts:
    """`ManifestParts` of a manifest-like dict; another shape is an InputError naming the field."""
    return _typed(ManifestParts, data, path)


def typed_inputs(data: dict[str, Any], path: Path | None = None) -> list[InputEntry]:
    """The `inputs` of a manifest-like dict, typed; another shape is an InputError naming the field."""
    return typed_files(data, path).inputs


def typed_files(data: dict[str, Any], path: Path | None = None) -> ManifestFiles:
    """The `inputs` and `directories` of a manifest-like dict, typed; another shape is an InputError."""
    return _typed(ManifestFiles, data, path)


def _typed(model: type[_M], data: dict[str, Any], path: Path | None) -> _M:
    try:
        return model.model_validate(data)
    except ValueError as exc:  # ValidationError is a ValueError
        raise InputError(f"manifest.json is not as releasegate writes it: {problem_line(exc)}",
                         file=path or Path(MANIFEST_FILE),
                         hint="releasegate verify cannot vouch for this run; run check again") from None


def typed_manifest(data: dict[str, Any] | Manifest, path: Path | None = None) -> Manifest:
    """A parsed manifest.json (as `read_manifest_file` gives it) as the typed `Manifest`; another shape is an
    InputError naming the field."""
    return data if isinstance(data, Manifest) else _typed(Manifest, data, path)


def check_manifest(data: Any, path: Path, *, whole: bool = True) -> dict[str, Any]:
    """`data` (a parsed manifest.json) unchanged when it has the shape releasegate writes (`whole`: every part;
    else its seal); else InputError."""
    try:
        finite_tree(data)
        (ManifestShape if whole else SealOnly).model_validate(data)
    except (ValueError, RecursionError) as exc:  # ValidationError is a ValueError
        raise InputError(f"manifest.json is not as releasegate writes it: {problem_line(exc)}", file=path,
                         hint="releasegate verify cannot vouch for this run; run check again") from None
    assert isinstance(data, dict)  # the model validated a mapping
    return data


def read_manifest_file(run_dir: Path, *, whole: bool = True) -> dict[str, Any] | None:
    """The run's manifest.json, checked (`check_manifest`; `whole`: every part, else its seal); None when the run
    has none. Unreadable (a FIFO, too large, not JSON) or of another shape: InputError naming the file."""
    path = Path(run_dir) / MANIFEST_FILE
    if not exists(path):
        return None
    text = read_text(path, what="manifest.json", max_bytes=MAX_MANIFEST_BYTES)
    try:
        data = json_loads(text)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"unreadable manifest: {_first(exc)}", file=path) from None
    return check_manifest(data, path, whole=whole)


def _first(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__

