"""Opening a columnar suite source: an arrow file, a save_to_disk directory, memory-mapped (shared by
reading rows and sampling them), and how errors name the source."""

from __future__ import annotations

from ..errors import InputError


def where(suite) -> str:
    """What errors name as the file: the local path, or `hub:org/name` for a hub dataset."""
    src = suite.source
    return f"hub:{src['hub']}" if "hub" in src else str(suite.path)


def _short(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _datasets():
    try:
        import datasets
    except ImportError:  # pragma: no cover - a dependency of releasegate
        raise InputError("suite sources need the 'datasets' package", hint="pip install datasets") from None
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)  # a read error is reported once, as an InputError
    return datasets


def disk_dataset(src: dict):
    """The split of a save_to_disk directory, as a memory-mapped Dataset."""
    datasets = _datasets()
    path = str(src["path"])
    try:
        data = datasets.load_from_disk(path)
    except Exception as exc:
        raise InputError(f"cannot read save_to_disk directory: {_short(exc)}", file=path) from None
    if isinstance(data, datasets.DatasetDict):
        split = src.get("split")
        if split is None and len(data) == 1:
            split = next(iter(data))
        if split not in data:
            raise InputError(f"no split '{split}' (splits: {', '.join(data)})" if split else
                             f"the directory holds several splits ({', '.join(data)})", file=path,
                             field="source.split", hint="set source.split")
        data = data[split]
    return data


def arrow_table(path: str):
    """An arrow file (IPC stream, as datasets writes it, or IPC file), memory-mapped."""
    import pyarrow as pa

    source = pa.memory_map(path)
    try:
        return pa.ipc.open_stream(source).read_all()
    except pa.ArrowInvalid:
        return pa.ipc.open_file(pa.memory_map(path)).read_all()
