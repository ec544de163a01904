"""YAML is read by libyaml's parser where PyYAML has it: the data, the node tree that error lines come from, and
every rejection (its words and line) are the same as the pure-Python loader gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from releasegate.errors import InputError
from releasegate.inputs import files

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = sorted(p for pattern in ("*.yaml", "examples/**/*.yaml", "tests/mistakes/**/*.yaml", "docs/*.yml")
                  for p in ROOT.glob(pattern))

HOSTILE = [
    "",
    "# only a comment\n",
    "a: 1\nb: [1, 2, {c: d}]\n",
    "a: {b: 1, c: 2\nd: 3\n",  # unclosed flow mapping
    "a:\n\t- 1\n",  # a tab as indentation
    "a: 1\na: 2\n",  # duplicate key: the last wins in both
    "--- 1\n--- 2\n",  # two documents
    "a: &x [1, 2]\nb: *x\nc: *y\n",  # an undefined alias
    "a: !!python/object:os.system ls\n",
    "a: 2021-13-45\n",  # a date the safe constructor rejects
    "a: 2021-02-03\nb: 1_000\nc: 0x1F\nd: .inf\ne: -.NaN\nf: ~\ng: yes\n",
    "base: &b {x: 1}\nmerged: {<<: *b, y: 2}\n",
    "a: \"\\0\"\n",  # an escaped NUL
    "a: \x00\n",  # a raw NUL
    "a: \x07bell\n",
    "a: \"\\ud800\"\n",
    "a: \"\x1b[31mred\"\n",
    "\ufeffa: 1\n",
    "%YAML 1.1\n---\na: 1\n",
    "%YAML 2.0\n---\na: 1\n",
    "%TAG ! tag:example.com,2000:\n---\na: !foo 1\n",
    "[" * 70 + "]" * 70,
    "[" * 1100,  # past libyaml's own nesting limit
    "a: &a [*a]\n",
    "a: &a [1]\n" + "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}' if i > 1 else '*a'] * 9)}]\n" for i in range(1, 9)),
    "key: 'unterminated\n",
    "? complex\n: key\n",
    "? [1, 2]\n: unhashable key\n",
    "a: " + "9" * 5000 + "\n",
    "- a\n- b\n -c\n",
    "a: b: c\n",
    "a: |\n  text\n   more\nb: >-\n  folded\n",
]


def outcome(read: Any, text: str) -> tuple[Any, ...]:
    """What reading `text` gives: the data and every node (kind, tag, value, where it starts and ends), or the
    error's whole line."""
    try:
        data, node = read(text)
    except InputError as exc:
        return ("rejected", str(exc))
    return ("read", repr(data), _nodes(node, []) if node is not None else None)


def _nodes(node: yaml.Node, out: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    value = node.value if isinstance(node, yaml.ScalarNode) else None
    out.append((type(node).__name__, node.tag, value, node.start_mark.line, node.start_mark.column,
                node.end_mark.line, node.end_mark.column))
    if isinstance(node, yaml.MappingNode):
        for key, child in node.value:
            _nodes(key, out)
            _nodes(child, out)
    elif isinstance(node, yaml.SequenceNode):
        for child in node.value:
            _nodes(child, out)
    return out


def pure_python(text: str) -> tuple[Any, yaml.Node | None]:
    return files._read_or_reject(text, "f.yaml", yaml.SafeLoader)


def as_loaded(text: str) -> tuple[Any, yaml.Node | None]:
    return files._parse_yaml(text, "f.yaml")


def test_the_fast_parser_is_in_use_where_pyyaml_has_libyaml() -> None:
    assert (files._FAST_LOADER is yaml.CSafeLoader) == yaml.__with_libyaml__


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_documents_read_and_fail_as_with_the_pure_python_loader(text: str) -> None:
    assert outcome(as_loaded, text) == outcome(pure_python, text)


def test_the_repositorys_configs_and_rubrics_read_the_same() -> None:
    assert len(FIXTURES) > 20
    for path in FIXTURES:
        text = path.read_text(encoding="utf-8")
        assert outcome(as_loaded, text) == outcome(pure_python, text), path


def test_libyaml_words_an_error_differently_so_the_rejection_is_worded_by_the_pure_python_loader() -> None:
    text = "a: {b: 1\nc: 2\n"
    with pytest.raises(yaml.YAMLError) as fast:
        yaml.compose(text, Loader=files._FAST_LOADER)
    with pytest.raises(InputError) as loaded:
        as_loaded(text)
    assert str(loaded.value) == "f.yaml:2: malformed YAML: expected ',' or '}', but got ':'"
    if yaml.__with_libyaml__:  # the reason for the second parse
        assert "expected ',' or '}', but got ':'" not in str(fast.value)


def test_without_libyaml_the_pure_python_loader_reads_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "_FAST_LOADER", yaml.SafeLoader)
    for text in HOSTILE:
        assert outcome(as_loaded, text) == outcome(pure_python, text)


def test_a_file_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = []
    real = files._FAST_LOADER

    def counting(text: str) -> Any:
        made.append(text)
        return real(text)

    monkeypatch.setattr(files, "_FAST_LOADER", counting)
    path = tmp_path / "c.yaml"
    path.write_text("a: [1, 2]\n")
    data, node = files.load_yaml(path, what="config")
    assert data == {"a": [1, 2]} and len(made) == 1
    assert files.line_of(node, ["a", 1]) == 1


@pytest.mark.parametrize("text", ['name: "\\uD800"\n', 'a:\n  "\\udfff": 1\n', 'l: ["ok", "x\\uDC80y"]\n'])
def test_a_lone_surrogate_escape_is_one_line_naming_its_line(text: str) -> None:
    """YAML's double-quoted escapes can write half of a UTF-16 pair, which no UTF-8 file, report or hash can
    hold: refused where it stands, never an internal error later (a rubric's name hashed into the run)."""
    with pytest.raises(InputError) as caught:
        files.load_yaml_text(text, source="r.yaml")
    assert "lone surrogate" in str(caught.value) and caught.value.line == text.count("\n", 0, text.index("\\u")) + 1
