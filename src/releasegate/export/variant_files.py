"""The files a served variant runs on: its model (and LoRA, draft) exported to GGUF at its type, or its merged
Hugging Face checkpoint for vLLM, made once per content and kept.

A variant's files live under `<cache>/<key>/`, where the key is a digest of everything that decides their bytes:
the source directories' contents (every file), the quant, whether the adapter is merged, the draft. The same
sources give the same key and the same bytes (the exports are deterministic), so a second matrix run reuses the
files; an edited adapter gives another key. `manifest.json` there lists each file with its size and sha256, which
the run records: a report names exactly the bytes that were served.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import field
from pathlib import Path
from typing import Any

from ..border.files import is_file, read_text, regular_entries, replace_file, sha256_file, walk_files
from ..border.structured import json_loads
from ..data_classes import dataclass
from ..errors import InputError
from .gguf import export_lora, export_manifest, export_model
from .llamacpp import merge_adapter

__all__ = ["ServedFiles", "llamacpp_files", "vllm_files", "tree_digest"]

FORMAT = 1
"""Part of every key: raise it when an exporter's output changes for the same inputs."""


@dataclass(frozen=True)
class ServedFiles:
    """What a started server loads, and the manifest of the files."""

    model: Path
    """The GGUF model file (llama.cpp) or the model directory (vLLM)."""
    loras: tuple[Path, ...] = ()
    """LoRA files (llama.cpp) or adapter directories (vLLM), served beside the model and chosen per request."""
    draft: Path | None = None
    """The draft model's GGUF (llama.cpp draft speculation)."""
    manifest: list[dict[str, Any]] = field(default_factory=list)
    """Per file: file, bytes, sha256 (and, for GGUF, its type and tensor types)."""

    @property
    def model_bytes(self) -> int:
        """Bytes on disk of what the server loads for the served model (model and LoRA, not the draft)."""
        return sum(m["bytes"] for m in self.manifest if m.get("role") in ("model", "lora"))

    @property
    def model_sha256(self) -> str | None:
        return next((m["sha256"] for m in self.manifest if m.get("role") == "model"), None)


def llamacpp_files(base: Path | None, adapter: Path | None, *, quant: str | None, merged: bool,
                   gguf: Path | None, draft: Path | None, cache: Path) -> ServedFiles:
    """The GGUF files of a llama.cpp variant, exported under `cache` unless already there."""
    if gguf is not None and adapter is None and draft is None:
        return _described(ServedFiles(model=gguf), {"model": [gguf]})
    key = _key({"server": "llamacpp", "base": _digest(base), "adapter": _digest(adapter), "quant": quant,
                "merged": merged, "gguf": _digest(gguf), "draft": _digest(draft)})
    out = cache / key
    if (kept := _kept(out)) is not None:  # the same sources exported before: reuse, the manifest says which bytes
        return kept
    out.mkdir(parents=True, exist_ok=True)
    loras: list[Path] = []
    if gguf is not None:
        model = gguf
    elif merged and adapter is not None:
        assert base is not None
        model = export_model(merge_adapter(base, adapter, out / "merged"), out / f"model-{quant}.gguf",
                             outtype=quant or "f16", name=f"{base.name}+{adapter.name}")
        shutil.rmtree(out / "merged")  # the float32 checkpoint was only the export's input: four bytes a weight
    else:
        assert base is not None
        model = export_model(base, out / f"model-{quant}.gguf", outtype=quant or "f16")
    if adapter is not None and not merged:
        loras.append(export_lora(adapter, out / "lora.gguf", base=base, outtype="f32"))
    draft_file = _exported_draft(draft, out) if draft is not None else None
    files = ServedFiles(model=model, loras=tuple(loras), draft=draft_file)
    described = _described(files, {"model": [model], "lora": loras, "draft": [draft_file] if draft_file else []})
    _write_manifest(out, described)
    return described


def _exported_draft(draft: Path, out: Path) -> Path:
    """The draft model's GGUF; a draft the converter cannot read (torn weights, another model's) is an
    InputError naming it, never an internal error."""
    try:
        return export_model(draft, out / "draft.gguf", outtype="f32")
    except Exception as exc:  # noqa: BLE001 - whatever the converter raised on the draft's files
        said = " ".join(str(exc).split())[:200]
        raise InputError(f"the draft model {draft} could not be exported to GGUF ({type(exc).__name__}: {said})",
                         field="speculative.draft", hint="give a draft saved with save_pretrained, with the "
                         "target's vocabulary") from None


def vllm_files(base: Path, adapter: Path | None, *, merged: bool, cache: Path) -> ServedFiles:
    """A vLLM variant's checkpoint: the merged model directory (made under `cache` once), or the base with the
    adapter directory as a LoRA module."""
    if adapter is None or not merged:
        files = ServedFiles(model=base, loras=(adapter,) if adapter is not None else ())
        return _described(files, {"model": _weights(base), "lora": _weights(adapter) if adapter else []})
    out = cache / _key({"server": "vllm", "base": _digest(base), "adapter": _digest(adapter), "merged": True})
    if (kept := _kept(out)) is not None:
        return kept
    model = merge_adapter(base, adapter, out / "merged")
    described = _described(ServedFiles(model=model), {"model": _weights(model)})
    _write_manifest(out, described)
    return described


def tree_digest(path: Path) -> str:
    """sha256 of one file's bytes (what `sha256sum` prints), or over a directory's files: relative names and
    contents, sorted."""
    if is_file(path):
        return sha256_file(path, what="source file")
    digest = hashlib.sha256()
    for file in _source_files(path):
        digest.update(str(file.relative_to(path)).encode("utf-8") + b"\0" + sha256_file(file).encode() + b"\0")
    return digest.hexdigest()


_SourceKey = tuple[str, tuple[tuple[str, int, int], ...]]
"""A source path resolved, and each of its files' name, size and mtime (ns)."""
_SOURCE_DIGESTS: dict[_SourceKey, str] = {}
"""Source digests by path and every file's size and mtime: the variants of one plan share their base and
adapter, which are read once, not once a variant."""


def _digest(path: Path | None) -> str | None:
    if path is None:
        return None
    files = [path] if is_file(path) else _source_files(path)
    seen = tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    key = (str(path.resolve()), seen)
    if key not in _SOURCE_DIGESTS:
        _SOURCE_DIGESTS[key] = tree_digest(path)
    return _SOURCE_DIGESTS[key]


def _source_files(folder: Path) -> list[Path]:
    """Every regular file of a source directory, hidden ones too (they decide an export's bytes as much); a FIFO,
    a device or a link loop there is an InputError naming it."""
    return walk_files(folder, what="source directory", hidden=True)


def _key(parts: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps({**parts, "format": FORMAT}, sort_keys=True).encode()).hexdigest()[:16]


def _weights(directory: Path) -> list[Path]:
    return regular_entries(directory, what="exported model directory", suffixes=(".safetensors", ".bin", ".gguf"))


def _described(files: ServedFiles, roles: dict[str, list[Path]]) -> ServedFiles:
    manifest = []
    for role, paths in roles.items():
        gguf = [p for p in paths if p.suffix == ".gguf"]
        described = {Path(m["file"]).name: m for m in _read_gguf(gguf)} if gguf else {}
        for path in paths:
            entry = described.get(path.name) or _plain_entry(path)
            manifest.append({**entry, "file": str(path), "role": role})
    return ServedFiles(model=files.model, loras=files.loras, draft=files.draft, manifest=manifest)


def _read_gguf(paths: list[Path]) -> list[dict[str, Any]]:
    """`export_manifest` of GGUF files; a file it cannot read is a ValueError naming it."""
    for path in paths:
        if not path.is_file():
            raise ValueError(f"{path}: not a file")
    try:
        return export_manifest(paths)
    except Exception as exc:  # noqa: BLE001 - gguf's reader raises whatever numpy does on a malformed file
        raise ValueError(f"{', '.join(p.name for p in paths)}: not a readable GGUF file ({exc})") from None


def _plain_entry(path: Path) -> dict[str, Any]:
    return {"file": str(path), "bytes": path.stat().st_size, "sha256": tree_digest(path)}


def _write_manifest(out: Path, files: ServedFiles) -> None:
    record = {"model": files.model.name if files.model.parent == out else str(files.model),
              "loras": [str(p) for p in files.loras], "draft": str(files.draft) if files.draft else None,
              "files": files.manifest}
    # written last and whole: a half-made export is never reused
    replace_file(out / "manifest.json", json.dumps(record, indent=2).encode("utf-8"), what="exported files' manifest")


def _kept(out: Path) -> ServedFiles | None:
    """The files exported under `out` before, when its manifest reads and every file still has its digest; None
    (export again) otherwise."""
    try:
        record = json_loads(read_text(out / "manifest.json", what="exported files' manifest"))
        files = _from_manifest(out, record)
        if all(tree_digest(Path(m["file"])) == m["sha256"] for m in files.manifest):
            return files
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, InputError):
        pass
    return None


def _from_manifest(out: Path, record: dict[str, Any]) -> ServedFiles:
    model = Path(record["model"])
    model = model if model.is_absolute() else out / model
    return ServedFiles(model=model, loras=tuple(Path(p) for p in record["loras"]),
                       draft=Path(record["draft"]) if record.get("draft") else None, manifest=record["files"])
