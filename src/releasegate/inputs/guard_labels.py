"""A guard of format `classifier`: its labels, checked before any model runs.

The guard's reply is a label name. `categories:` maps the unsafe labels (label -> description) and `safe_labels:`
names the safe ones; a reply in neither has no verdict. For a local classifier (a backend whose capabilities
name `labels_from`, e.g. `hf_classifier`) the model's own labels (config.json `id2label`) are known, so every
label the config names must be one of them, and every one of them must be named: a label nobody mapped would be
no verdict for every reply of its class, and a misspelt one would never match at all.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..border.files import is_dir, read_text
from ..border.hub import hub_snapshot
from ..border.structured import json_loads
from ..errors import InputError, Where
from .backend_facts import capabilities
from .files import KeyAt
from .model_files import MAX_CONFIG_BYTES, check_model_dir

if TYPE_CHECKING:
    from .target import TargetConfig

__all__ = ["classifier_labels", "model_labels", "label_key"]


def label_key(label: str) -> str:
    """How labels are compared: in any case, spaces around them aside, an accent composed or not (a config.json
    may spell 'é' as 'e' and a combining accent, a YAML file as one character)."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", label).strip().casefold())


def classifier_labels(section: dict[str, Any], name: str, fmt: str, target: TargetConfig, at: KeyAt) -> tuple[str, ...]:
    """The guard's `safe_labels`, every label of it checked (InputError at the field that names a wrong one)."""
    safe = tuple(str(v) for v in section.get("safe_labels") or ())
    labels_from = capabilities(target.backend).labels_from
    if fmt != "classifier":
        if safe:
            raise InputError(f"safe_labels is for a guard of format classifier (this one is {fmt})",
                             **at("guards", name, "safe_labels"), hint="remove it, or set format: classifier")
        if labels_from:  # its replies are label names: no other format reads them
            raise InputError(f"backend {target.backend} replies with a label name: its guard's format is classifier",
                             **at("guards", name, "format"), hint="format: classifier, with safe_labels and categories")
        return safe
    unsafe = tuple(str(k) for k in section.get("categories") or {})
    for key, given in (("categories", unsafe), ("safe_labels", safe)):
        if not given:
            raise InputError(f"a classifier guard needs {key}: the labels that mean "
                             f"{'unsafe' if key == 'categories' else 'safe'}", **at("guards", name, key),
                             hint="categories: {pii: 'personal data'}, safe_labels: [safe]")
        _check_spelling(given, at("guards", name, key))
    both = [label for label in safe if label_key(label) in {label_key(u) for u in unsafe}]
    if both:
        raise InputError(f"label '{both[0]}' is both safe and unsafe", **at("guards", name, "safe_labels"),
                         hint="name each label in one of safe_labels and categories")
    if labels_from:
        where = at("guards", name, labels_from)
        _match_model(model_labels(getattr(target, labels_from), where, adapted=bool(section.get("adapter"))),
                     unsafe, safe, name, at)
    return safe


_SHOWN = 60
"""How much of a label an error shows: a model's config.json may name one of any length."""


def _shown(label: str) -> str:
    return label if len(label) <= _SHOWN else label[:_SHOWN] + "..."


def _check_spelling(labels: tuple[str, ...], where: Where) -> None:
    seen: dict[str, str] = {}
    for label in labels:
        if "," in label or not label.strip():  # a verdict lists its codes comma-separated
            raise InputError(f"label {_shown(label)!r} cannot be a guard code (empty, or a comma in it)", **where)
        if label_key(label) in seen:  # labels are compared in any case: these two would be one
            raise InputError(f"labels '{_shown(seen[label_key(label)])}' and '{_shown(label)}' differ only in case "
                             "(or spaces around them)", **where)
        seen[label_key(label)] = label


def _match_model(model: list[str], unsafe: tuple[str, ...], safe: tuple[str, ...], name: str, at: KeyAt) -> None:
    _check_spelling(tuple(model), at("guards", name, "base"))
    known = {label_key(m) for m in model}
    listed = ", ".join(_shown(m) for m in model[:20]) + (f" and {len(model) - 20} more" if len(model) > 20 else "")
    for key, given in (("categories", unsafe), ("safe_labels", safe)):
        stray = [label for label in given if label_key(label) not in known]
        if stray:
            raise InputError(f"label '{_shown(stray[0])}' is not a label of the model (its labels: {listed})",
                             **at("guards", name, key), hint="name the labels as config.json id2label spells them")
    named = {label_key(label) for label in unsafe + safe}
    unnamed = [m for m in model if label_key(m) not in named]
    if unnamed:
        raise InputError(f"the model's label '{_shown(unnamed[0])}' is in neither safe_labels nor categories: every reply it "
                         "gives that label would have no verdict", **at("guards", name, "safe_labels"),
                         hint=f"add '{_shown(unnamed[0])}' to safe_labels or to categories")


def model_labels(base: str | Path | None, where: Where, *, adapted: bool = False) -> list[str]:
    """A classifier's labels in index order, from the config.json of its directory (or of its copy in the local
    hub cache); transformers' LABEL_0, LABEL_1 where it names none. A model saved as another kind (a causal LM)
    has no trained classification head, unless an adapter (`adapted`) brings one."""
    folder = Path(base) if base is not None and is_dir(Path(base)) else hub_snapshot(str(base))
    if folder is None:
        raise InputError(f"classifier {base} is neither a directory nor in the local hub cache: its labels cannot be "
                         "checked", **where, hint="download it where the hub is reachable and set base to its directory")
    check_model_dir(folder, "classifier", where)
    data = json_loads(read_text(folder / "config.json", what="classifier config.json", max_bytes=MAX_CONFIG_BYTES))
    kinds = data.get("architectures")
    if not adapted and isinstance(kinds, list) and kinds and not any(str(k).endswith("ForSequenceClassification")
                                                                      for k in kinds):
        raise InputError(f"classifier {base} is a {kinds[0]}, not a sequence-classification model: its "
                         "classification head would be untrained", **where,
                         hint="point at a model saved with AutoModelForSequenceClassification")
    if data.get("problem_type") == "multi_label_classification":  # each label scored on its own: none means safe
        raise InputError(f"classifier {base} is multi-label: the label it scores highest is never 'none of them'",
                         **where, hint="use a single-label classifier that has a label for a safe reply")
    id2label = data.get("id2label")
    if id2label is None:
        count = data.get("num_labels", 2)
        return [f"LABEL_{i}" for i in range(count if isinstance(count, int) and 0 < count <= 10_000 else 2)]
    by_index = {str(k): v for k, v in id2label.items()} if isinstance(id2label, dict) else {}
    labels = [by_index.get(str(i)) for i in range(len(by_index))]
    if not by_index or not all(isinstance(label, str) for label in labels):
        raise InputError(f"{folder / 'config.json'}: id2label is not a map of 0..n-1 to label names", **where,
                         hint="point at a sequence-classification model (config.json with id2label)")
    count = data.get("num_labels", len(labels))  # transformers sizes the head by num_labels, not by id2label
    if count != len(labels):
        raise InputError(f"{folder / 'config.json'}: num_labels is {count!r} but id2label names {len(labels)} "
                         "labels", **where, hint="make num_labels the number of labels id2label names")
    return [str(label) for label in labels]
