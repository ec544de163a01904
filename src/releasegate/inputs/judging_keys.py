"""Which config keys judge a run, and what was laid over the official config.

A run is judged by its rubric file and by every config key that changes what is measured against the criteria:
the suites (their answer and format checks, sample, limit, repeats), generation, the judge, guards and probes,
load, seeds, caches, the target's serving settings. Only a few keys do not: where the reports go (`output`),
how the endpoint is reached and its credentials (`target.base_url`, `target.api_key_env`, `target.headers`,
`target.secret_keys`), and which model files answer (`target.base`, `adapter`, `draft`, `model`), which an
attestation binds by their bytes instead. Anything not named here judges: a new key is judging until said
otherwise, so a false PASS cannot slip through an unlisted key.

The official config is the layer of an `extends:` chain that names the rubric (`rubric:`), with the files it
extends; every key written by a layer over it, and every `--set`, is an override (`layered_over_official`).
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .files import field_path

if TYPE_CHECKING:
    from .composition import Composed, Layer
    from .config import Config
    from .rubric import Rubric

__all__ = ["NOT_JUDGING", "judges", "judging_part", "layered_over_official", "key_parts", "effective_rubric_sha256",
           "effective_sha256_of", "snapshot_form"]

NOT_JUDGING: dict[str, tuple[str, ...]] = {
    "output": (),  # every key under it
    "target": ("base_url", "api_key_env", "headers", "secret_keys", "base", "adapter", "draft", "model",
               "served_files"),
}
"""Config sections whose keys do not judge: the section whole (empty tuple) or only the keys named."""


def key_parts(key: str) -> tuple[str | int, ...]:
    """'suites[0].answer' -> ('suites', 0, 'answer')."""
    parts: list[str | int] = []
    for name in key.replace("]", "").split("."):
        head, *indices = name.split("[")
        parts += [head] if head else []
        parts += [int(i) if i.isascii() and i.isdigit() else i for i in indices]  # '²' is a digit int() refuses
    return tuple(parts)


def judges(parts: tuple[str | int, ...]) -> bool:
    """Whether setting the key at `parts` can change what is measured against the criteria."""
    if not parts or parts[0] not in NOT_JUDGING:
        return True
    keys = NOT_JUDGING[str(parts[0])]
    if not keys:
        return False
    return len(parts) < 2 or parts[1] not in keys  # `target` replaced whole may change any of its keys


def judging_part(config: dict[str, Any]) -> dict[str, Any]:
    """The config without the keys that do not judge, nor `rubric` (the rubric's path: its content is hashed in
    its place): what the effective rubric holds of the config."""
    out = copy.deepcopy(config)
    out.pop("rubric", None)
    out.pop("extends", None)
    for section, keys in NOT_JUDGING.items():
        if not keys:
            out.pop(section, None)
        elif isinstance(out.get(section), dict):
            for key in keys:
                out[section].pop(key, None)
    return out


def effective_rubric_sha256(config: dict[str, Any], rubric: dict[str, Any], cases: list[str] | tuple[str, ...] = ()) -> str:
    """The effective rubric's hash: a rubric snapshot (`Rubric.as_dict` as YAML reads it back) with the judging
    keys of a config (as the run's config.yaml snapshot holds it) and `cases`, the sha256 of every suite and
    schema file the cases are read from (`run.manifest.case_digests`: a suite edited in place is another
    rubric), as canonical JSON (sorted keys, no whitespace, UTF-8). Paths are hashed as written, so the same
    files give the same hash on any machine."""
    text = json.dumps({"rubric": rubric, "config": judging_part(config), "cases": sorted(cases)}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def snapshot_form(rubric: Rubric) -> dict[str, Any]:
    """A loaded Rubric as its run snapshot (rubric.yaml) reads back: `Rubric.as_dict`, plain data that YAML
    writes and reads back unchanged."""
    return rubric.as_dict()


def effective_sha256_of(config: Config, rubric: Rubric, cases: list[str] | tuple[str, ...] = ()) -> str:
    """`effective_rubric_sha256` of a loaded Config and Rubric, as a run of them records it (their snapshots: the
    config as composed, credentials masked), with `cases` (the suite and schema files' sha256)."""
    return effective_rubric_sha256(config.masked_raw(), snapshot_form(rubric), cases)


def layered_over_official(composed: Composed) -> tuple[dict[str, Any], ...]:
    """[{'key', 'by'}]: each key written by an `extends:` layer over the layer that names the rubric ('by' the
    file), then each `--set` ('by': '--set'), in the order applied. A layer's null (a key removed) counts."""
    official = _official_layer(composed)
    out: list[dict[str, Any]] = []
    for index, layer in enumerate(composed.layers):
        if layer.override is not None:
            out.append({"key": layer.override.key, "by": "--set"})
        elif index > official and layer.written is not None and layer.file is not None:
            out += [{"key": key, "by": str(Path(layer.file).resolve())} for key in _written_keys(layer.written, ())]
    return tuple(out)


def _official_layer(composed: Composed) -> int:
    """The layer that stands for the official config: the lowest file layer naming the rubric the run uses (the
    same file, resolved where each layer names it), so a layer over it that names that rubric again, loosening a
    check beside it, is still an override; a layer naming another rubric makes that rubric the run's own (its
    hash is another one, which a deploy's `--rubric-sha256` refuses)."""
    children = composed.origin.children or {}
    if "rubric" not in children:
        return len(composed.layers)
    last: int = children["rubric"].layer
    used = _named_rubric(composed.layers[last])
    for index, layer in enumerate(composed.layers[:last]):
        if layer.override is None and used is not None and _named_rubric(layer) == used:
            return index
    return last


def _named_rubric(layer: Layer) -> Path | None:
    """The rubric file a config layer names, resolved beside the layer's file; None: it names none."""
    value = (layer.written or {}).get("rubric") if isinstance(layer.written, dict) else None
    if not isinstance(value, str) or layer.file is None:
        return None
    return (Path(layer.file).parent / value).resolve()


def _written_keys(value: object, parts: tuple[str | int, ...]) -> list[str]:
    """The key path of every value a layer writes: mappings walked into, anything else (a list too) whole."""
    if isinstance(value, dict) and value:
        return [key for k, v in value.items() for key in _written_keys(v, (*parts, k))]
    return [field_path(list(parts))] if parts else []
