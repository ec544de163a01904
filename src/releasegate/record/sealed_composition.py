"""manifest.json's `composition`, vouched for by the run's sealed run.json.

The composition records how the config was composed: the `extends:` files, the `--set` overrides and every key
laid over the config layer that names the rubric (`over_official`), which `bless`, `attest` and `promote` hold to
the rubric. manifest.json is no sealed file (the seal lives in it), so `check` keeps the composition's sha256 in
run.json (`composition_sha256`), which is: a composition deleted, emptied or edited since is refused rather than
read as "nothing was overridden". A run from before the digest was kept has none, and is read as it always was.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..errors import InputError
from .stored_manifest import MANIFEST_FILE, SealOnly

__all__ = ["composition_sha256", "require_sealed_composition"]


def composition_sha256(manifest: dict[str, Any]) -> str:
    """sha256 of the manifest's `composition` in one canonical form (keys sorted); a manifest with none hashes
    as `null`, so a composition added or removed later differs too."""
    composition = SealOnly.model_validate(manifest).composition
    data = composition.model_dump(mode="json", exclude_unset=True) if composition is not None else None
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def require_sealed_composition(run_path: Path, manifest: dict[str, Any], recorded: str | None) -> None:
    """Refuse (InputError, exit 2) a manifest whose `composition` is not the one run.json recorded when the run
    started (`recorded`, its `composition_sha256`). None (an older run, or a run.json that cannot be read: `verify`
    says so) checks nothing."""
    if recorded is None or recorded == composition_sha256(manifest):
        return
    raise InputError("`composition` is not the one the run recorded (run.json composition_sha256): the config "
                     "layers and overrides it names were edited or removed since", file=Path(run_path) / MANIFEST_FILE,
                     hint=f"releasegate verify {run_path}; run check again for a run that can be released")
