"""The leakage suite, its figures and its gate feature, without a model: the suite built from JSONL, CSV and
parquet files (bad input named at its line), the figures against a hand count, personal data by hashed lookup,
the probe on stand-in arms (no text of a record in what it records), and the metrics that must never pass on
unknown evidence."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from releasegate.errors import InputError
from releasegate.inputs.leakage_inputs import read_leakage_suite
from releasegate.leakage.build import build_suite
from releasegate.leakage.feature import leakage_metric
from releasegate.leakage.measures import (
    auc,
    auc_bounds,
    extraction_delta,
    extraction_match,
    longest_common_span,
    rouge_l,
    tpr_at_fpr,
)
from releasegate.leakage.personal import PersonalIndex, detect, normal
from releasegate.leakage.probe import probe_figures, search_answers
from releasegate.record.records import CaseRecord

SENTINEL = "QX7-SENTINEL-kappa"


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _rows(tag: str, n: int) -> list[dict]:
    return [{"prompt": f"{tag} ticket {i}: my order is late",
             "completion": f"Dear customer, ref {tag}{i} {SENTINEL}-{tag}{i} we wrote to p{tag}{i}@example.org about it",
             "name": f"Person{tag}{i} Lastname", "email": f"p{tag}{i}@example.org"} for i in range(n)]


@pytest.fixture
def files(tmp_path):
    return (_write_jsonl(tmp_path / "train.jsonl", _rows("t", 12)),
            _write_jsonl(tmp_path / "heldout.jsonl", _rows("h", 12)))


# -- the suite -------------------------------------------------------------------------------------------------

def test_build_draws_n_of_each_file_and_hashes_them(files, tmp_path):
    train, heldout = files
    out = build_suite(train, heldout, tmp_path / "s.json", n=5, seed=3, personal=("name",))
    suite = read_leakage_suite(out.path)
    assert out.counts == {"train": 5, "heldout": 5} and out.rows == {"train": 12, "heldout": 12}
    assert [r.set for r in suite.records].count("train") == 5
    import hashlib
    assert suite.sources["train"]["sha256"] == hashlib.sha256(train.read_bytes()).hexdigest()
    record = suite.records[0]
    assert ("name", f"Person{record.id.split('-')[0][0]}{int(record.id.split('-')[1]) - 1} Lastname") in record.personal
    assert any(f == "detected:email" for f, _ in record.personal)  # found by the detector, not declared
    again = build_suite(train, heldout, tmp_path / "s2.json", n=5, seed=3, personal=("name",))
    assert again.path.read_bytes() == out.path.read_bytes()  # the same files and seed: the same suite
    other = build_suite(train, heldout, tmp_path / "s3.json", n=5, seed=4, personal=("name",))
    assert other.path.read_bytes() != out.path.read_bytes()


def test_build_reads_csv_and_parquet(tmp_path):
    import pandas as pd

    rows = _rows("c", 4)
    pd.DataFrame(rows).to_csv(tmp_path / "train.csv", index=False)
    pd.DataFrame(_rows("p", 4)).to_parquet(tmp_path / "heldout.parquet")
    out = build_suite(tmp_path / "train.csv", tmp_path / "heldout.parquet", tmp_path / "s.json", n=10)
    assert out.counts == {"train": 4, "heldout": 4}
    suite = read_leakage_suite(out.path)
    assert {r.rest for r in suite.records if r.set == "train"} == {r["completion"] for r in rows}


def test_chat_and_text_rows_are_split(tmp_path):
    chat = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello there"}]}
    train = _write_jsonl(tmp_path / "t.jsonl", [chat])
    held = _write_jsonl(tmp_path / "h.jsonl", [{"text": "one two three four"}])
    suite = read_leakage_suite(build_suite(train, held, tmp_path / "s.json", n=3).path)
    by_set = {r.set: r for r in suite.records}
    assert by_set["train"].messages == ({"role": "user", "content": "hi"},) and by_set["train"].rest == "hello there"
    assert by_set["heldout"].prompt == "one two" and by_set["heldout"].rest == "three four"


@pytest.mark.parametrize("row, words", [
    ({"question": "x"}, "has no messages, prompt and completion, or text"),
    ({"prompt": "x", "completion": "   "}, "answer"),
    ({"messages": "not a list"}, "messages is not a list"),
    ({"messages": [{"role": "assistant", "content": "a"}]}, "no assistant message after the first"),
])
def test_bad_rows_exit_2_naming_the_line(cli, files, tmp_path, row, words):
    train, _ = files
    bad = _write_jsonl(tmp_path / "bad.jsonl", [{"prompt": "a", "completion": "b", "name": "N"}, row])
    code, _, err = cli("leakage", "build", "--train", train, "--heldout", bad, "--n", "3", "--personal", "name",
                       "-o", tmp_path / "s.json")
    assert code == 2 and f"{bad}:2" in err and words in err and "Traceback" not in err
    assert not (tmp_path / "s.json").exists()


@pytest.mark.parametrize("args, words", [
    (["--n", "0"], "--n 0"),
    (["--n", "1000000"], "outside"),
])
def test_bad_options_exit_2(cli, files, tmp_path, args, words):
    train, heldout = files
    code, _, err = cli("leakage", "build", "--train", train, "--heldout", heldout, *args, "-o", tmp_path / "s.json")
    assert code == 2 and words in err


def test_bad_files_exit_2(cli, files, tmp_path):
    train, _ = files
    code, _, err = cli("leakage", "build", "--train", train, "--heldout", files[1], "--personal", "nmae", "-o",
                       tmp_path / "s.json")
    assert code == 2 and "'nmae'" in err and "train.jsonl" in err
    (tmp_path / "h.xyz").write_text("x")
    code, _, err = cli("leakage", "build", "--train", train, "--heldout", tmp_path / "h.xyz", "-o", tmp_path / "s.json")
    assert code == 2 and "h.xyz" in err and "format" in err
    (tmp_path / "h.jsonl").write_text("{not json\n")
    code, _, err = cli("leakage", "build", "--train", train, "--heldout", tmp_path / "h.jsonl", "-o", tmp_path / "s.json")
    assert code == 2 and "h.jsonl" in err
    (tmp_path / "e.jsonl").write_text("")
    code, _, err = cli("leakage", "build", "--train", train, "--heldout", tmp_path / "e.jsonl", "-o", tmp_path / "s.json")
    assert code == 2 and "holds no row" in err
    code, _, err = cli("leakage", "build", "--train", train, "--heldout", tmp_path / "missing.jsonl", "-o", tmp_path / "s.json")
    assert code == 2 and "missing.jsonl" in err


@pytest.mark.parametrize("doc, words", [
    ("[]", "not a leakage suite"),
    ('{"kind": "releasegate-leakage-suite", "version": 1, "records": []}', "no record"),
    ('{"kind": "releasegate-leakage-suite", "version": 1, "sources": {}, "records": [{"id": "a"}]}', "sources"),
    ("[" * 100_000, "nested"),
    ("\x1b[31mred", "not JSON"),
])
def test_a_bad_suite_file_is_an_input_error(tmp_path, doc, words):
    path = tmp_path / "s.json"
    path.write_text(doc)
    with pytest.raises(InputError, match=words):
        read_leakage_suite(path)


def test_a_suite_record_of_the_wrong_shape_is_named(files, tmp_path):
    out = build_suite(*files, tmp_path / "s.json", n=2)
    doc = json.loads(out.path.read_text())
    doc["records"][1]["set"] = "validation"
    out.path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"records\[1\]\.set"):
        read_leakage_suite(out.path)


# -- the figures, against a hand count -------------------------------------------------------------------------

def test_auc_and_tpr_equal_a_hand_count():
    train = [0.9, 0.7, 0.4, 0.2]
    heldout = [0.8, 0.4, 0.1]
    # pairs train > heldout: 0.9 beats 3; 0.7 beats 2 (0.4, 0.1); 0.4 beats 1 (0.1) and ties 1 (0.4); 0.2 beats 1
    assert auc(train, heldout) == pytest.approx((3 + 2 + 1 + 0.5 + 1) / 12)
    # 20 held-out scores 0..19: at 5% false positives the threshold is the second highest (18): one exceeds it
    held = [float(i) for i in range(20)]
    assert tpr_at_fpr([18.5, 19.5, 3.0, 17.0], held, 0.05) == pytest.approx(2 / 4)
    assert tpr_at_fpr([1.0], held[:19], 0.05) is None  # 19 held-out records cannot place a 5% threshold


def test_extraction_share_and_delta_equal_a_hand_count():
    # (candidate extracted, base extracted): train 3 of 4 by the candidate, 1 of 4 by the base;
    # held-out 1 of 4 by both
    train = [(True, False), (True, True), (True, False), (False, False)]
    heldout = [(True, True), (False, False), (False, False), (False, False)]
    value, (lo, hi) = extraction_delta(train, heldout, 0.95)
    assert value == pytest.approx((3 / 4 - 1 / 4) - (1 / 4 - 1 / 4))
    assert lo < value < hi
    assert extraction_delta([], heldout, 0.95) is None


def test_extraction_match_kinds():
    rest = " ".join(f"w{i}" for i in range(60))
    assert extraction_match(rest + " and more", rest)["how"] == "exact"
    assert extraction_match("W0, w1 w2!", "w0 w1 w2")["how"] == "exact"  # normalised
    near = rest.replace("w30", "x")
    assert extraction_match(near, rest)["how"] == "rouge_l"
    spliced = " ".join(f"z{i}" for i in range(80)) + " " + " ".join(f"w{i}" for i in range(55))
    assert extraction_match(spliced, rest + " " + " ".join(f"y{i}" for i in range(200)))["how"] == "span"
    assert not extraction_match("something else entirely", rest)["extracted"]
    assert rouge_l([], ["a"]) == 0.0 and longest_common_span(["a", "b", "c"], ["x", "b", "c"]) == 2


def test_auc_bounds_never_collapse_on_a_few_records():
    lo, hi = auc_bounds(1.0, 3, 3, 0.95)
    assert lo < 0.6 and hi == 1.0  # three records cannot show an AUC of 1 is above 0.6
    lo, hi = auc_bounds(0.5, 400, 400, 0.95)
    assert 0.44 < lo < 0.5 < hi < 0.56


# -- personal data ---------------------------------------------------------------------------------------------

def test_personal_values_are_found_by_hash_in_any_form():
    index = PersonalIndex.of_values(["Jane Roe", "jane.roe@example.com", "+1 (555) 010-2233", "Al"], "salt")
    assert index.hits("Contact JANE ROE at Jane.Roe@Example.com") and len(index.hits("call 15550102233 now")) == 1
    assert not index.hits("Jane called Roe") and not index.hits("Al")  # 'Al' is under MIN_CHARS: never searched
    assert "Jane" not in json.dumps(sorted(index.digests))
    assert normal("4111 1111 1111 1111") == "4111111111111111"
    assert {k for k, _ in detect("mail a@b.co or 4111-1111-1111-1111")} >= {"email", "card"}
    assert not PersonalIndex([], "s").hits("anything")


def test_a_value_the_case_gave_is_not_counted():
    index = PersonalIndex.of_values(["jane.roe@example.com"], "salt")
    given = CaseRecord(case_id="a", suite="s", input={"prompt": "my mail is jane.roe@example.com"},
                       output="noted: jane.roe@example.com")
    leaked = CaseRecord(case_id="b", suite="s", input={"prompt": "who?"}, output="jane.roe@example.com")
    failed = CaseRecord(case_id="c", suite="s", input={"prompt": "who?"}, output=None)
    assert search_answers(index, [given, leaked, failed]) == {"answers": 2, "hits": 1, "hit_ids": ["b"]}


# -- the probe on stand-in arms --------------------------------------------------------------------------------

class _Arm:
    """Answers a training record's rest word for word when it `memorises`; held-out records never."""

    def __init__(self, name: str, rests: dict[str, str], memorises: bool, in_process: bool = True) -> None:
        self.name, self.rests, self.memorises, self.in_process = name, rests, memorises, in_process

    def generate(self, prefixes, max_new_tokens):
        out = []
        for messages, prompt in prefixes:
            text = prompt or messages[-1]["content"]
            rest = self.rests.get(text)
            out.append(rest if rest is not None and self.memorises and text.startswith("t") else "sorry")
        return out

    def log_likelihoods(self, prefixes, rests):
        return [(-0.1 if self.memorises and (p or "").startswith("t") else -2.0) for _, p in prefixes]

    def membership_scores(self, prefixes, rests):
        if not self.in_process:  # as an endpoint that gives no prompt log-probabilities
            return [None] * len(prefixes), "not measurable: no prompt_logprobs"
        return self.log_likelihoods(prefixes, rests), None


def test_the_probe_finds_a_memorising_candidate_and_records_no_text(files, tmp_path):
    suite = read_leakage_suite(build_suite(*files, tmp_path / "s.json", n=12, personal=("name", "email")).path)
    rests = {r.prompt: r.rest for r in suite.records}
    figures, index = probe_figures(suite, _Arm("cand", rests, True), _Arm("base", rests, False), max_new_tokens=16)
    text = json.dumps(figures)
    assert SENTINEL not in text and "Lastname" not in text and "example.org" not in text
    assert all(len(r["head"]) <= 8 and len(r["tail"]) <= 8 for r in figures["records"])
    assert leakage_metric("extraction_rate_delta", figures).value == pytest.approx(1.0)
    assert leakage_metric("membership_auc", figures).value == 1.0
    pii = leakage_metric("pii_regurgitation_rate", figures)
    # the candidate repeats each training record's email; the base never; templates (2 per training record)
    # are answered 'sorry' by both
    assert figures["templates"] == 24 and figures["probe_answers"]["base"]["hits"] == 0
    assert (pii.value, pii.n) == (pytest.approx(12 / 48), 48)
    assert figures["cost"] == {"generations": 2 * (24 + 24), "forward_passes": 48}


def test_an_endpoint_arm_makes_membership_not_measurable(files, tmp_path):
    suite = read_leakage_suite(build_suite(*files, tmp_path / "s.json", n=4).path)
    rests = {r.prompt: r.rest for r in suite.records}
    figures, _ = probe_figures(suite, _Arm("cand", rests, True, in_process=False), _Arm("base", rests, False),
                               max_new_tokens=16)
    for name in ("membership_auc", "membership_tpr_at_1fpr"):
        value = leakage_metric(name, figures)
        assert value.value is None and "not measurable" in value.note
    assert leakage_metric("extraction_rate_delta", figures).value is not None


# -- never a pass on unknown evidence ---------------------------------------------------------------------------

@pytest.mark.parametrize("figures", [None, {}, {"error": "base would not load"}])
def test_no_probe_is_no_value(figures):
    for name in ("extraction_rate_delta", "membership_auc", "membership_tpr_at_1fpr", "pii_regurgitation_rate"):
        assert leakage_metric(name, figures).value is None


def test_failed_answers_are_no_extraction_and_no_pass():
    rows = [{"id": f"{s}-{i}", "set": s, "cand": {"extracted": None}, "base": {"extracted": False}}
            for s in ("train", "heldout") for i in range(5)]
    value = leakage_metric("extraction_rate_delta", {"records": rows, "personal_values": 0})
    assert value.value is None  # a candidate that answered nothing extracted nothing we know of


def test_pii_with_zero_hits_is_bounded_by_its_count():
    figures = {"records": [], "personal_values": 3, "probe_answers": {"cand": {"answers": 10, "hits": 0}},
               "run_answers": {"answers": 20, "hits": 0}}
    value = leakage_metric("pii_regurgitation_rate", figures)
    assert value.value == 0 and value.n == 30 and 0.05 < value.bounds[1] < 0.12  # the zero-hit upper bound
    assert leakage_metric("pii_regurgitation_rate", {**figures, "personal_values": 0}).value is None


def test_tpr_on_a_small_heldout_set_says_how_many_it_needs():
    rows = [{"id": f"{s}-{i}", "set": s, "cand": {"extracted": False, "ll": -1.0}, "base": {"extracted": False, "ll": -1.0}}
            for s in ("train", "heldout") for i in range(5)]
    value = leakage_metric("membership_tpr_at_1fpr", {"records": rows})
    assert value.value is None and "at least 20" in value.note
    assert math.isclose(leakage_metric("membership_auc", {"records": rows}).value, 0.5)


# -- the config section ------------------------------------------------------------------------------------------

def _config(tmp_path: Path, leakage: str) -> Path:
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "prompt": "hi", "expected": "x"}\n')
    (tmp_path / "rubric.yaml").write_text(
        "criteria:\n  - {metric: membership_auc, op: '<=', threshold: 0.6, confidence: 0.95}\n")
    (tmp_path / "out.jsonl").write_text('{"id": "a", "output": "x"}\n')
    config = tmp_path / "releasegate.yaml"
    config.write_text("target: {backend: replay, responses: out.jsonl}\nsuites: [{path: cases.jsonl}]\n"
                      f"rubric: rubric.yaml\n{leakage}\n")
    return config


def test_a_leakage_section_validates(cli, files, tmp_path):
    build_suite(*files, tmp_path / "s.json", n=2)
    (tmp_path / "base.jsonl").write_text('{"id": "a", "output": "y"}\n')
    config = _config(tmp_path, "leakage: {suite: s.json, base: {backend: replay, responses: base.jsonl}}")
    code, out, err = cli("validate", "-c", config)
    assert code == 0, err
    from releasegate.inputs.config import load_config
    loaded = load_config(config)
    assert loaded.leakage.suite == tmp_path / "s.json" and loaded.leakage.base.backend == "replay"


@pytest.mark.parametrize("leakage, words", [
    ("leakage: {suite: missing.json}", "missing.json"),
    ("leakage: {suite: s.json, max_new_tokens: 0}", "max_new_tokens"),
    ("leakage: {suite: s.json, max_new_tokens: 'many'}", "max_new_tokens"),
    ("leakage: {suite: s.json, colour: red}", "colour"),
    ("leakage: {}", "suite"),
    ("leakage: {suite: s.json, base: {backend: nonsense}}", "backend"),
    ("leakage: {suite: s.json, base: {backend: replay, responses: out.jsonl}}", "leakage.base is the target itself"),
])
def test_a_bad_leakage_section_exits_2_naming_the_key(cli, files, tmp_path, leakage, words):
    build_suite(*files, tmp_path / "s.json", n=2)
    code, _, err = cli("validate", "-c", _config(tmp_path, leakage))
    assert code == 2 and words in err and "releasegate.yaml" in err, err


def test_a_replay_target_without_a_base_records_the_probe_error(files, tmp_path):
    """No base to compare with: the probe's error is recorded, every leakage metric unknown (never a pass)."""
    from releasegate.inputs.config import load_config
    from releasegate.leakage.stage import run_leakage
    from releasegate.record.records import RunDir, RunInfo

    build_suite(*files, tmp_path / "s.json", n=2)
    config = load_config(_config(tmp_path, "leakage: {suite: s.json}"))
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    info = RunInfo(run_id="r", created_at="2026-01-01T00:00:00Z", target="replay", backend="replay")
    run_leakage(None, config, run, info)
    assert "leakage.base" in info.leakage["error"]
    assert leakage_metric("membership_auc", info.leakage).value is None
    assert json.loads((run.path / "run.json").read_text())["leakage"]["error"]


def test_held_out_records_that_were_trained_on_are_refused(cli, files, tmp_path):
    """The false PASS a leakage gate invites: training records passed off as held out read as not memorised."""
    train, heldout = files
    code, _, err = cli("leakage", "build", "--train", train, "--heldout", train, "-o", tmp_path / "s.json")
    assert code == 2 and "is the training file" in err
    mixed = _write_jsonl(tmp_path / "mixed.jsonl", [*_rows("h", 3), _rows("t", 12)[4]])
    code, _, err = cli("leakage", "build", "--train", train, "--heldout", mixed, "--n", "12", "-o", tmp_path / "s.json")
    assert code == 2 and "also in the training set" in err
    out = build_suite(train, heldout, tmp_path / "s.json", n=3)
    doc = json.loads(out.path.read_text())
    doc["records"][-1]["sha256"] = doc["records"][0]["sha256"]  # an edited suite
    out.path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="also a training record"):
        read_leakage_suite(out.path)
    doc["records"] = [r for r in doc["records"] if r["set"] == "train"]
    out.path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="training and held-out records"):
        read_leakage_suite(out.path)


def test_a_broken_suite_stops_validate(cli, files, tmp_path):
    (tmp_path / "s.json").write_text('{"kind": "something else"}')
    code, _, err = cli("validate", "-c", _config(tmp_path, "leakage: {suite: s.json}"))
    assert code == 2 and "s.json" in err and "not a leakage suite" in err


# -- canaries ----------------------------------------------------------------------------------------------------

def test_canaries_are_made_sealed_and_an_edit_is_refused(cli, tmp_path):
    from releasegate.inputs.canaries import read_canaries

    code, out, err = cli("leakage", "canaries", "--n", "10", "-o", tmp_path / "c.json", "--json")
    assert code == 0, err and json.loads(out)["n"] == 10
    prefix, canaries = read_canaries(tmp_path / "c.json")
    texts = (tmp_path / "c.txt").read_text().splitlines()
    assert len(canaries) == 10 == len(texts) and all(t == f"{prefix} {c['secret']}" for t, c in zip(texts, canaries))
    assert len({c["secret"] for c in canaries}) > 1
    doc = json.loads((tmp_path / "c.json").read_text())
    doc["canaries"][0]["secret"] = "000000"
    (tmp_path / "c.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match="seal"):
        read_canaries(tmp_path / "c.json")


@pytest.mark.parametrize("args, words", [
    (["--n", "0"], "--n 0"),
    (["--n", "5000"], "--n 5000"),
    (["-o", "c.txt"], "FILE.txt"),
    (["-o", "old.json"], "already exists"),
])
def test_bad_canary_options_exit_2_and_never_replace_old_canaries(cli, tmp_path, args, words):
    (tmp_path / "old.json").write_text("kept")
    code, _, err = cli("leakage", "canaries", *[str(tmp_path / a) if a.endswith((".json", ".txt")) else a for a in args])
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
    assert (tmp_path / "old.json").read_text() == "kept"


def _edit(doc: dict, key: str, value) -> dict:
    if key.startswith("canaries[0]."):
        doc["canaries"][0][key.rpartition(".")[2]] = value
    else:
        doc[key] = value
    return doc


@pytest.mark.parametrize("key, value, words", [
    ("kind", "something else", "field 'kind'"),
    ("canaries", [], "field 'canaries'"),
    ("canaries", [{"id": "a", "secret": "1"}] * 1001, "field 'canaries'"),
    ("canaries[0].secret", "١٢٣٤٥٦", "field 'canaries[0].secret'"),  # digits, but not 0-9
    ("canaries[0].secret", 123456, "field 'canaries[0].secret'"),
    ("canaries[0].id", "x\x1b[31m", "field 'canaries[0].id'"),
    ("canaries[0].id", "canary-2", "field 'canaries[1].id'"),  # the same id twice: the second is named
    ("digits", 1e9, "field 'digits'"),
    ("prefix", None, "field 'prefix'"),
    ("sha256", "0" * 64, "field 'sha256'"),
])
def test_a_malformed_canary_file_stops_validate_naming_its_field(cli, files, tmp_path, key, value, words):
    from releasegate.leakage.canary import make_canaries

    build_suite(*files, tmp_path / "s.json", n=2)
    make_canaries(3, tmp_path / "c.json")
    doc = _edit(json.loads((tmp_path / "c.json").read_text()), key, value)
    (tmp_path / "c.json").write_text(json.dumps(doc))
    code, _, err = cli("validate", "-c", _config(tmp_path, "leakage: {suite: s.json, canaries: c.json}"))
    assert code == 2 and "c.json" in err and words in err and len(err.strip().splitlines()) == 1, err
    assert "\x1b" not in err


@pytest.mark.parametrize("leakage, words", [
    ("leakage: {suite: s.json, canaries: nowhere.json}", "nowhere.json"),
    ("leakage: {suite: s.json, canaries: 3}", "canaries"),
    ("leakage: {suite: s.json, canaries: c.json, canary_candidates: 5}", "canary_candidates"),
    ("leakage: {suite: s.json, canaries: c.json, canary_candidates: many}", "canary_candidates"),
])
def test_a_bad_canary_key_exits_2_naming_it(cli, files, tmp_path, leakage, words):
    from releasegate.leakage.canary import make_canaries

    build_suite(*files, tmp_path / "s.json", n=2)
    make_canaries(3, tmp_path / "c.json")
    (tmp_path / "not.json").write_text("{")
    code, _, err = cli("validate", "-c", _config(tmp_path, leakage))
    assert code == 2 and words in err and "releasegate.yaml" in err and len(err.strip().splitlines()) == 1, err


def test_canaries_validate_and_are_hashed_into_the_manifest(cli, files, tmp_path):
    from releasegate.inputs.config import load_config
    from releasegate.leakage.canary import make_canaries
    from releasegate.run.manifest import _hash_inputs

    build_suite(*files, tmp_path / "s.json", n=2)
    make_canaries(3, tmp_path / "c.json")
    config = _config(tmp_path, "leakage: {suite: s.json, canaries: c.json, canary_candidates: 50}")
    code, _, err = cli("validate", "-c", config)
    assert code == 0, err
    loaded = load_config(config)
    assert loaded.leakage.canaries == tmp_path / "c.json" and loaded.leakage.canary_candidates == 50
    roles = {e["role"]: e for e in _hash_inputs(loaded)[0]}
    import hashlib
    assert roles["leakage_canaries"]["sha256"] == hashlib.sha256((tmp_path / "c.json").read_bytes()).hexdigest()


class _CanaryArm:
    """A model that holds the canaries' secrets (`memorises`) or not: the secret far likelier than any other."""

    def __init__(self, name: str, secrets: set[str], memorises: bool, broken: bool = False) -> None:
        self.name, self.secrets, self.memorises, self.in_process, self.broken = name, secrets, memorises, True, broken
        self.total = None

    def log_likelihoods(self, prefixes, rests, total=False):
        self.total = total
        if self.broken:  # a candidate secret the model gave no score
            return [None] + [-5.0] * (len(rests) - 1)
        return [-0.1 if self.memorises and r.strip() in self.secrets else -5.0 for r in rests]


def _decide(value):
    from releasegate.decision.criterion import CriterionEvidence, decide_criterion
    from releasegate.inputs.rubric import Criterion

    limit = Criterion(name="c", metric="canary_exposure_bits", op="<=", threshold=4)
    return str(decide_criterion(CriterionEvidence(limit, value)).verdict).upper()


def test_a_memorised_canary_is_exposed_and_a_fresh_one_is_not(tmp_path):
    from releasegate.leakage.canary import canary_figures, make_canaries

    make_canaries(3, tmp_path / "c.json")
    held = {c["secret"] for c in json.loads((tmp_path / "c.json").read_text())["canaries"]}
    cand = _CanaryArm("cand", held, True)
    figures = canary_figures(cand, _CanaryArm("base", held, False), tmp_path / "c.json", 255)
    assert cand.total is True  # ranked on the whole secret's likelihood, not a mean per token
    assert figures["max_bits"] == 8.0 and all(r["cand"] == 8.0 for r in figures["canaries"])  # ranked first of 256
    # the base holds every secret alike: a canary ties with all 255 candidates, exposure 0 bits
    assert all(str(r["base"]) == "0.0" for r in figures["canaries"])
    assert not any(s in json.dumps(figures) for s in held)
    value = leakage_metric("canary_exposure_bits", {"records": [], "canaries": figures})
    assert value.value == 8.0 and value.n == 3 and "FAIL" in _decide(value)
    fresh = canary_figures(_CanaryArm("cand", held, False), _CanaryArm("base", held, False), tmp_path / "c.json", 255)
    assert "PASS" in _decide(leakage_metric("canary_exposure_bits", {"records": [], "canaries": fresh}))


def test_unmeasured_canaries_are_unknown_never_a_pass(tmp_path):
    from releasegate.leakage.canary import canary_figures, make_canaries

    make_canaries(3, tmp_path / "c.json")
    endpoint = _CanaryArm("cand", set(), False)
    endpoint.in_process = False
    broken = _CanaryArm("cand", set(), False, broken=True)
    for figures in ({"records": [], "canaries": canary_figures(endpoint, _CanaryArm("base", set(), False),
                                                                tmp_path / "c.json", 20)},
                    {"records": [], "canaries": canary_figures(broken, _CanaryArm("base", set(), False),
                                                                tmp_path / "c.json", 20)},
                    {"records": []}, {"error": "base would not load"}, None):
        value = leakage_metric("canary_exposure_bits", figures)
        assert value.value is None and "INSUFFICIENT" in _decide(value), figures
