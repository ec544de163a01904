"""Hostile files handed to `validate` and `check`: JSON Lines nested 10,000 deep read through datasets, an xlsx zip
bomb, one cell at XFD1048576, entity declarations, FIFOs and /dev/zero where a file belongs, a save_to_disk
state.json pointing outside its directory. Each is exit 2 and one line naming the file, in a separate process
(a crash inside pyarrow would be a signal, not an exception), with its peak RSS measured (printed with -s)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT, write_jsonl

COLUMNS = "columns: {id: id, prompt: prompt, expected: expected}"
RSS_LIMIT_MIB = 1536  # the hostile file must never cost what it asks for (GBs); releasegate with pandas ~ 300 MiB


LAUNCH = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[2:]); "
          "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); sys.exit(code)")
"""A small launcher between the test and releasegate: a child's peak RSS counts its parent's at fork (Linux), so
measured from pytest it would read pytest's size; from the launcher, releasegate's own (plus ~10 MiB at most)."""


def run_measured(*args, cwd: Path) -> tuple[int, str, float]:
    """(exit code, stderr, peak RSS in MiB) of `releasegate ARGS` in its own process (killed after 300 s)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    rss = cwd / ".rss"
    command = [sys.executable, "-c", LAUNCH, str(rss), sys.executable, "-m", "releasegate", *map(str, args)]
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()  # reaped, its pipe closed
        raise
    return proc.returncode, err, int(rss.read_text()) / 1024


def refused(root: Path, *args, names: str, says: str) -> float:
    code, err, rss = run_measured(*args, cwd=root)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    assert names in err and says in err, err
    print(f"\n{names}: exit 2, peak RSS {rss:.0f} MiB: {lines[0][:160]}")
    assert rss < RSS_LIMIT_MIB
    return rss


def project(root: Path, source: str) -> Path:
    (root / "rubric.yaml").write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\n")
    write_jsonl(root / "responses.jsonl", [{"id": "a", "output": "x"}])
    config = root / "releasegate.yaml"
    config.write_text("target: {backend: replay, responses: responses.jsonl}\n"
                      f"suites:\n  - name: s\n    source: {source}\n    {COLUMNS}\n    answer: {{type: exact}}\n"
                      "rubric: rubric.yaml\n")
    return config


# ---------------------------------------------------------------- JSON nested past every parser

@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_a_source_nested_10000_deep(tmp_path, fmt):
    deep = "[" * 10_000 + "]" * 10_000
    lines = [json.dumps({"id": "a", "prompt": "p", "expected": "x"}), '{"id": "b", "prompt": ' + deep + ', "expected": "x"}']
    (tmp_path / f"deep.{fmt}").write_text("\n".join(lines) + "\n" if fmt == "jsonl" else "[" + ",\n".join(lines) + "]\n")
    config = project(tmp_path, f"{{format: {fmt}, path: deep.{fmt}}}")
    refused(tmp_path, "validate", "-c", config, names=f"deep.{fmt}:2", says="nested too deeply")


def test_an_ordinary_nested_source_is_read(tmp_path):
    write_jsonl(tmp_path / "ok.jsonl", [{"id": "a", "prompt": "p", "expected": {"k": [[[["x"]]]]}}])
    config = project(tmp_path, "{format: jsonl, path: ok.jsonl}")
    code, err, _ = run_measured("validate", "-c", config, cwd=tmp_path)
    assert code == 0, err


# ---------------------------------------------------------------- xlsx

def _workbook(path: Path, sheet_xml: bytes | None = None, *, bomb_mib: int = 0) -> None:
    """A minimal valid xlsx; `sheet_xml` replaces its sheet; `bomb_mib` pads the sheet to that many MiB of
    whitespace (deflate shrinks it about 1000 times)."""
    import openpyxl

    book = openpyxl.Workbook()
    book.active.append(["id", "prompt", "expected"])
    book.active.append(["a", "p", "x"])
    book.save(path)
    if sheet_xml is None and not bomb_mib:
        return
    with zipfile.ZipFile(path) as src:
        parts = {name: src.read(name) for name in src.namelist()}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as out:
        for name, data in parts.items():
            if name != "xl/worksheets/sheet1.xml":
                out.writestr(name, data)
                continue
            with out.open(name, "w", force_zip64=True) as fh:
                fh.write(sheet_xml if sheet_xml is not None else data.replace(b"</worksheet>", b""))
                pad = b" " * 2**20
                for _ in range(bomb_mib):
                    fh.write(pad)
                if sheet_xml is None:
                    fh.write(b"</worksheet>")


def test_an_xlsx_zip_bomb(tmp_path):
    _workbook(tmp_path / "bomb.xlsx", bomb_mib=300)
    assert (tmp_path / "bomb.xlsx").stat().st_size < 2 * 2**20
    config = project(tmp_path, "{format: xlsx, path: bomb.xlsx}")
    refused(tmp_path, "validate", "-c", config, names="bomb.xlsx", says="unzips to")


def test_an_xlsx_with_one_far_cell(tmp_path):
    import openpyxl

    book = openpyxl.Workbook()
    book.active.append(["id", "prompt", "expected"])
    book.active["XFD1048576"] = "far"
    book.save(tmp_path / "far.xlsx")
    assert (tmp_path / "far.xlsx").stat().st_size < 10_000
    config = project(tmp_path, "{format: xlsx, path: far.xlsx}")
    refused(tmp_path, "validate", "-c", config, names="far.xlsx", says="16,384 columns")


LAUGHS = b"""<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;">]>
<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1">
<c r="A1" t="inlineStr"><is><t>&lol2;</t></is></c></row></sheetData></worksheet>"""


def test_an_xlsx_declaring_entities_says_so(tmp_path):
    _workbook(tmp_path / "laughs.xlsx", LAUGHS)
    config = project(tmp_path, "{format: xlsx, path: laughs.xlsx}")
    refused(tmp_path, "validate", "-c", config, names="laughs.xlsx", says="declares a DTD or entities")


def test_an_xlsx_declaring_entities_in_utf16_says_so(tmp_path):
    """Past the byte scan (UTF-16 text), defusedxml refuses it inside openpyxl: the same line, not 'no sheet'."""
    xml = LAUGHS.decode().replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>')
    _workbook(tmp_path / "laughs16.xlsx", xml.encode("utf-16"))
    config = project(tmp_path, "{format: xlsx, path: laughs16.xlsx}")
    refused(tmp_path, "validate", "-c", config, names="laughs16.xlsx", says="declares a DTD or entities")


# ---------------------------------------------------------------- not a regular file

@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def test_a_fifo_as_config(tmp_path, fifo):
    refused(tmp_path, "validate", "-c", fifo, names=str(fifo), says="not a regular file")


def test_dev_zero_as_config(tmp_path):
    refused(tmp_path, "validate", "-c", "/dev/zero", names="/dev/zero", says="not a regular file")


def test_a_fifo_as_jsonl_suite(tmp_path, fifo):
    (tmp_path / "rubric.yaml").write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\n")
    config = tmp_path / "releasegate.yaml"
    config.write_text(f"target: {{backend: replay, responses: r.jsonl}}\nsuites: [{{path: {fifo}, answer: {{type: exact}}}}]\n"
                      "rubric: rubric.yaml\n")
    refused(tmp_path, "validate", "-c", config, names=str(fifo), says="not a regular file")


@pytest.mark.parametrize("fmt", ["parquet", "xlsx", "csv", "jsonl", "arrow"])
def test_a_fifo_as_source(tmp_path, fmt):
    os.mkfifo(tmp_path / f"pipe.{fmt}")
    config = project(tmp_path, f"{{format: {fmt}, path: pipe.{fmt}}}")
    refused(tmp_path, "validate", "-c", config, names=f"pipe.{fmt}", says="not a regular file")


def _saved(path: Path, split: str | None = None) -> None:
    import datasets

    data = datasets.Dataset.from_list([{"id": "a", "prompt": "p", "expected": "x"}])
    (datasets.DatasetDict({split: data}) if split else data).save_to_disk(str(path))


def test_a_fifo_as_dataset_dict_json(tmp_path):
    _saved(tmp_path / "saved", "train")
    index = tmp_path / "saved" / "dataset_dict.json"
    index.unlink()
    os.mkfifo(index)
    config = project(tmp_path, "{format: disk, path: saved}")
    refused(tmp_path, "validate", "-c", config, names="dataset_dict.json", says="not a regular file")


def test_a_state_json_naming_a_data_file_outside(tmp_path):
    _saved(tmp_path / "saved")
    state_path = tmp_path / "saved" / "state.json"
    state = json.loads(state_path.read_text())
    inside = tmp_path / "saved" / state["_data_files"][0]["filename"]
    inside.rename(tmp_path / "outside.arrow")
    state["_data_files"][0]["filename"] = "../outside.arrow"
    state_path.write_text(json.dumps(state))
    config = project(tmp_path, "{format: disk, path: saved}")
    refused(tmp_path, "validate", "-c", config, names="state.json", says="outside its directory")


def test_a_hidden_data_file_is_hashed_in_the_manifest(tmp_path):
    _saved(tmp_path / "saved")
    state_path = tmp_path / "saved" / "state.json"
    state = json.loads(state_path.read_text())
    inside = tmp_path / "saved" / state["_data_files"][0]["filename"]
    hidden = inside.with_name(".hidden.arrow")
    inside.rename(hidden)
    state["_data_files"][0]["filename"] = hidden.name
    state_path.write_text(json.dumps(state))
    config = project(tmp_path, "{format: disk, path: saved}")
    code, err, _ = run_measured("check", "-c", config, "--run-id", "r", "--no-progress", cwd=tmp_path)
    assert code in (0, 1, 3), err
    manifest = json.loads((tmp_path / "reports" / "r" / "manifest.json").read_text())
    assert any(entry.get("path", "").endswith(".hidden.arrow") for entry in manifest["inputs"]), manifest["inputs"]


def test_a_fifo_as_review_csv_and_rubric(tmp_path, fifo):
    from test_hostile_files import replay_project

    config = replay_project(tmp_path)
    assert run_measured("check", "-c", config, "--run-id", "r", "--no-progress", cwd=tmp_path)[0] in (0, 3)
    run = tmp_path / "reports" / "r"
    assert run_measured("review", "export", run, cwd=tmp_path)[0] == 0
    refused(tmp_path, "review", "import", run, fifo, names=str(fifo), says="not a regular file")
    refused(tmp_path, "gate", run, "--rubric", fifo, names=str(fifo), says="not a regular file")
