"""`validate` warns on a suite whose UTF-8 text was once read as Windows-1252 or Latin-1 (mojibake), naming the
file and line; correct Korean, accented or mixed text never warns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_jsonl
from releasegate.inputs.mojibake import MAX_NAMED, garbled

KOREAN = ["안녕하세요, 계약서 제3조를 요약해 주세요.", "위약금 조항이 있습니까?", "갱신 기한은 언제입니까?"]
ACCENTED = ["Résumé du contrat: la clause de résiliation s'applique à l'échéance.", "Straße, Äöü, naïve, ção, ¿Señor?",
            "voilà « citation » — 20 °C, 5 € • note…", "Ünïcödé ©2024 ™"]


def cp1252_read(text: str) -> str:
    """UTF-8 bytes read as Windows-1252, an undefined byte kept as its Latin-1 control (as editors do)."""
    return "".join(bytes([b]).decode("cp1252", errors="ignore") or chr(b) for b in text.encode("utf-8"))


@pytest.mark.parametrize("text", KOREAN + ACCENTED + ["plain ASCII", "日本語のテキスト", "Привет, мир"])
def test_correct_text_is_not_garbled(text):
    assert garbled(text) is None


@pytest.mark.parametrize("text", KOREAN + ACCENTED[:2])
def test_text_read_as_windows_1252_or_latin_1_is_garbled(text):
    for misread in (cp1252_read(text), text.encode("utf-8").decode("latin-1")):
        assert misread != text
        found = garbled(misread)
        assert found is not None and "as UTF-8" in found
        assert "\x9b" not in found and "\x85" not in found  # C1 controls shown as stand-ins, never raw


def test_a_lost_character_is_named():
    assert "U+FFFD" in garbled("계약서 \ufffd 조항")


def project(root: Path, suites: dict[str, list[dict]]) -> Path:
    names = "".join(f"  - path: {name}\n" for name in suites)
    for name, cases in suites.items():
        write_jsonl(root / name, cases)
    (root / "replies.jsonl").write_text("")
    (root / "rubric.yaml").write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\n")
    (root / "releasegate.yaml").write_text(
        f"target: {{backend: replay, responses: replies.jsonl}}\nsuites:\n{names}rubric: rubric.yaml\n")
    return root / "releasegate.yaml"


def cases(texts: list[str], prefix: str) -> list[dict]:
    return [{"id": f"{prefix}{i}", "prompt": t, "expected": "ok"} for i, t in enumerate(texts)]


def test_validate_names_the_file_and_line_of_a_garbled_korean_suite(tmp_path, cli):
    config = project(tmp_path, {"ko.jsonl": cases(KOREAN, "ko"), "fr.jsonl": cases(ACCENTED, "fr"),
                                "ko_broken.jsonl": cases(["fine", *(cp1252_read(t) for t in KOREAN)], "kb")})
    code, out, _ = cli("validate", "-c", config)
    assert code == 0  # a warning, not a refusal: a case may hold such text on purpose
    warnings = [line for line in out.splitlines() if "mojibake" in line]
    assert len(warnings) == 1, out
    assert "ko_broken.jsonl" in warnings[0] and "line 2:" in warnings[0] and "line 4:" in warnings[0]
    assert "'안녕" in warnings[0] and "re-save it as UTF-8" in warnings[0]
    code, out, _ = cli("validate", "-c", config, "--json")
    assert [w for w in json.loads(out)["warnings"] if "mojibake" in w] == [w.split("warning: ", 1)[1] for w in warnings]


def test_a_clean_korean_and_accented_suite_gives_no_warning(tmp_path, cli):
    code, out, _ = cli("validate", "-c", project(tmp_path, {"ko.jsonl": cases(KOREAN, "ko"),
                                                            "fr.jsonl": cases(ACCENTED, "fr")}), "--json")
    assert code == 0 and json.loads(out)["warnings"] == []


def test_json_escaped_mojibake_and_a_garbled_csv_source_are_found(tmp_path, cli):
    escaped = tmp_path / "escaped.jsonl"
    escaped.write_text(json.dumps({"id": "e", "prompt": cp1252_read("café"), "expected": "x"}, ensure_ascii=True) + "\n")
    assert "\\u00c3" in escaped.read_text()
    (tmp_path / "tickets.csv").write_text("id,prompt,expected\nt1,hello,ok\nt2," + cp1252_read("요약") + ",ok\n",
                                          encoding="utf-8")
    config = project(tmp_path, {})
    config.write_text(config.read_text().replace(
        "suites:\n", "suites:\n  - path: escaped.jsonl\n  - source: {path: tickets.csv}\n    columns: {id: id, prompt: prompt, "
                     "expected: expected}\n"))
    code, out, err = cli("validate", "-c", config, "--json")
    assert code == 0, err
    warnings = json.loads(out)["warnings"]
    assert any("escaped.jsonl" in w and "line 1:" in w and "'café'" in w for w in warnings), warnings
    assert any("tickets.csv" in w and "line 3:" in w for w in warnings), warnings


def test_many_garbled_lines_are_counted_not_listed(tmp_path, cli):
    config = project(tmp_path, {"big.jsonl": cases([cp1252_read("요약 \x1b[31m") + f" {i}" for i in range(50)], "b")})
    code, out, _ = cli("validate", "-c", config, "--json")
    [warning] = json.loads(out)["warnings"]
    assert warning.count("line ") == MAX_NAMED and f"(and {50 - MAX_NAMED} more)" in warning
    assert "\x1b" not in warning


def test_a_garbled_parquet_source_names_its_row(tmp_path, cli):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    pq.write_table(pa.table({"id": ["a", "b"], "prompt": [KOREAN[0], cp1252_read(KOREAN[1])], "expected": ["x", "y"]}),
                   tmp_path / "t.parquet")
    config = project(tmp_path, {})
    config.write_text(config.read_text().replace("suites:\n", "suites:\n  - source: {path: t.parquet}\n    columns: "
                                                              "{id: id, prompt: prompt, expected: expected}\n"))
    code, out, err = cli("validate", "-c", config, "--json")
    assert code == 0, err
    [warning] = json.loads(out)["warnings"]
    assert "t.parquet" in warning and "row 2:" in warning and "위약금" in warning
