"""A seeded, stratified `sample:` of a suite source: the allocation over strata, the same rows for a seed in
every format, a limited run that is the sample's first cases (and reads only their rows), and a resume that
plans the same cases."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import pytest

from conftest import write_jsonl
from releasegate.inputs.config import load_config
from releasegate.inputs.sampling import allocate, draw
from releasegate.inputs.suites import load_suite, load_suites

pd = pytest.importorskip("pandas")
pytest.importorskip("datasets")
pytest.importorskip("pyarrow")

from test_suite_sources import _config, _entry, _flat, _one_line_error, _responses  # noqa: E402


def test_allocation_is_proportional_with_every_stratum_kept():
    assert allocate([50, 30, 20], n=10) == [5, 3, 2]
    assert allocate([97, 2, 1], n=10) == [8, 1, 1]  # a stratum of one row is not rounded away
    assert allocate([9, 1], n=9) == [8, 1]  # never more rows than a stratum has
    assert allocate([5, 3], n=100) == [5, 3]  # n past the source: every row
    assert allocate([40, 30, 20, 10], n=2) == [1, 1, 0, 0]  # fewer rows than strata: the largest
    assert allocate([40, 30, 20, 10], per_stratum=15) == [15, 15, 15, 10]
    for sizes in ([7, 7, 7], [1000, 3, 3, 1], [5, 4, 3, 2, 1]):
        for n in range(1, sum(sizes) + 1):
            take = allocate(sizes, n=n)
            assert sum(take) == n and all(0 <= t <= s for t, s in zip(take, sizes))
            if n >= len(sizes):
                assert min(take) >= 1


def test_draw_is_seeded_stratified_and_every_prefix_is_spread():
    codes = [i % 3 if i < 900 else 3 for i in range(1000)]  # strata of 300, 300, 300 and 100 rows
    spec = {"n": 100, "seed": 5}
    order = draw(codes, spec).tolist()
    assert order == draw(codes, spec).tolist()
    assert order != draw(codes, {**spec, "seed": 6}).tolist()
    assert len(set(order)) == 100
    take = Counter(codes[i] for i in order)
    assert take == {0: 30, 1: 30, 2: 30, 3: 10}
    assert draw(codes, spec, limit=7).tolist() == order[:7]


@pytest.mark.parametrize("sizes", [[300, 300, 300, 100], [50, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], [400, 200, 7, 3, 1],
                                   [5, 5, 5, 5, 5, 5, 5, 5]])
def test_every_first_k_cases_hold_each_stratum_and_none_above_its_share(sizes):
    codes = [s for s, size in enumerate(sizes) for _ in range(size)]
    for spec in ({"n": sum(sizes) // 3, "seed": 1}, {"per_stratum": 4, "seed": 2}):
        order = draw(codes, spec).tolist()
        take = Counter(codes[i] for i in order)
        for k in range(1, len(order) + 1):
            got = Counter(codes[i] for i in order[:k])
            assert all(got[s] < k * m / len(order) + 1 for s, m in take.items()), (spec, k, got)
            if k >= len(take):
                assert set(got) == set(take)


def _sampled(kind, directory, sample="{n: 12, seed: 3, by: [risk]}", name=None):
    entry = _entry(kind, directory) + f"    sample: {sample}\n"
    return load_config(_config(directory, entry, name or f"{kind}.yaml")).suites[0]


@pytest.mark.parametrize("kind", ["parquet_template", "csv", "disk", "arrow", "xlsx"])
def test_the_same_rows_in_every_format_each_case_as_unsampled(tmp_path, kind):
    (tmp_path / "rubrics").mkdir()
    want = [c.id for c in load_suite(_sampled("parquet_template", tmp_path, name="p.yaml"), tmp_path)]
    suite = _sampled(kind, tmp_path)
    cases = load_suite(suite, tmp_path)
    assert [c.id for c in cases] == want
    assert Counter(c.tags["risk"] for c in cases) == {"low": 4, "medium": 4, "high": 4}
    whole = {c.id: c for c in load_suite(dataclasses.replace(suite, sample=None), tmp_path)}
    assert all(whole[c.id] == c for c in cases)  # a sampled row gives the case it gives unsampled


def test_per_stratum_by_two_columns(tmp_path):
    (tmp_path / "rubrics").mkdir()
    suite = _sampled("parquet_template", tmp_path, "{per_stratum: 2, seed: 1, by: [risk, task]}")
    cases = load_suite(suite, tmp_path)
    strata = Counter((c.tags["risk"], c.tags["task"]) for c in cases)
    frame = _flat()
    assert strata == {key: min(2, n) for key, n in Counter(zip(frame["risk"], frame["task"])).items()}
    assert [c.id for c in cases] == [c.id for c in load_suite(suite, tmp_path)]


def test_limit_is_the_first_cases_of_the_sample_and_reads_only_their_row_groups(project, cli, monkeypatch):
    import pyarrow.parquet as pq

    n = 100_000
    frame = pd.DataFrame({
        "ticket_id": [f"t-{i:06d}" for i in range(n)],
        "text": [f"ticket {i}" for i in range(n)],
        "label": ["billing"] * n,
        "risk": ["high" if i % 10 == 0 else "low" for i in range(n)],
    })
    frame.to_parquet(project / "big.parquet", row_group_size=10_000)
    entry = ("  - name: big\n    source: {path: big.parquet}\n"
             "    columns: {id: ticket_id, prompt: text, expected: label, tags: [risk]}\n"
             "    answer: {type: exact}\n    sample: {n: 40, seed: 2, by: [risk]}\n")
    config = _config(project, entry)
    cfg = load_config(config)
    sample = [c.id for c in load_suites(cfg.suites, project)]
    assert Counter(cid for cid in sample if int(cid[2:]) % 10 == 0).total() == 4  # 10% high-risk rows

    groups = []
    real = pq.ParquetFile.read_row_group
    monkeypatch.setattr(pq.ParquetFile, "read_row_group", lambda self, i, *a, **k: groups.append(i) or real(self, i, *a, **k))
    write_jsonl(project / "responses.jsonl", [{"id": cid, "output": "billing"} for cid in sample])
    code, _, err = cli("check", "-c", config, "--limit", "3", "--run-id", "lim", "--allow-pending", "--no-progress")
    assert code != 2, err
    records = [json.loads(r)["case_id"] for r in (project / "reports/lim/records.jsonl").read_text().splitlines()]
    assert records == sample[:3]
    assert len(groups) <= 3  # the row groups of those three rows, not the ten of the file
    manifest = json.loads((project / "reports/lim/manifest.json").read_text())
    assert [(e["suite"], e["cases"]) for e in manifest["samples"]] == [("big", 3)]


def test_resume_plans_the_same_sample_and_refuses_another(project, cli):
    _responses(project)
    entry = _entry("parquet", project) + "    sample: {n: 20, seed: 9, by: [risk]}\n"
    config = _config(project, entry)
    code, _, err = cli("check", "-c", config, "--run-id", "r", "--allow-pending", "--no-progress")
    assert code in (0, 1, 3), err
    run = project / "reports" / "r"
    whole = (run / "records.jsonl").read_text()
    assert len(whole.splitlines()) == 20
    (run / "records.jsonl").write_text("".join(whole.splitlines(True)[:5]))  # as if killed after five cases
    info = json.loads((run / "run.json").read_text())
    info["status"] = "interrupted"
    (run / "run.json").write_text(json.dumps(info))
    code, _, err = cli("check", "--resume", run, "--allow-pending", "--no-progress")
    assert code in (0, 1, 3), err
    assert (run / "records.jsonl").read_text() == whole

    manifest = json.loads((run / "manifest.json").read_text())
    manifest["samples"][0]["ids_sha256"] = "0" * 64  # as if the draw had given other cases
    (run / "manifest.json").write_text(json.dumps(manifest))
    code, _, err = cli("check", "--resume", run, "--allow-pending", "--no-progress")
    assert code == 2 and "sample" in err, err


def test_sample_errors_are_one_line(project, cli):
    _flat().to_parquet(project / "t.parquet")
    base = "  - name: t\n    source: {path: t.parquet}\n    columns: {prompt: text, expected: intent}\n"
    _one_line_error(cli, _config(project, base + "    sample: {n: 5, by: [region]}\n"),
                    "releasegate.yaml:", "t.parquet", "field 'suites[0].sample.by[0]'", "no column 'region'")
    _one_line_error(cli, _config(project, base + "    sample: {n: 5, per_stratum: 2}\n"),
                    "field 'suites[0].sample'", "exactly one of n")
    _one_line_error(cli, _config(project, base + "    sample: {n: 0}\n"), "suites[0].sample.n")
    nested = _entry("parquet", project) + "    sample: {n: 5, by: [messages]}\n"
    _one_line_error(cli, _config(project, nested), "releasegate.yaml:", "field 'suites[0].sample.by[0]'",
                    "cannot make strata")
    jsonl = "  - name: t\n    path: suites/example.jsonl\n    sample: {n: 5}\n"
    _one_line_error(cli, _config(project, jsonl), "field 'suites[0].sample'", "source")


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_an_error_names_the_source_row_of_a_sampled_case(project, cli, fmt):
    frame = _flat()
    spec = {"n": 6, "seed": 4, "by": ["risk"]}
    codes = pd.factorize(frame["risk"])[0]
    row = int(draw(codes, spec)[3])  # the fourth case of the sample
    frame.loc[row, "ticket_id"] = "not a valid id"
    getattr(frame, f"to_{fmt}")(project / f"t.{fmt}", index=False)
    entry = (f"  - name: t\n    source: {{path: t.{fmt}}}\n"
             "    columns: {id: ticket_id, prompt: text, expected: intent, tags: [risk]}\n"
             "    sample: {n: 6, seed: 4, by: [risk]}\n")
    place = f"t.csv:{row + 2} (spreadsheet row {row + 2}):" if fmt == "csv" else f"t.parquet (row {row + 1}):"
    _one_line_error(cli, _config(project, entry), place, "field 'ticket_id'")


def test_validate_keeps_no_case_list(project, cli, monkeypatch):
    import releasegate.inputs.suites as suites

    def refuse(*args, **kwargs):
        raise AssertionError("validate built the list of cases")

    monkeypatch.setattr(suites, "load_suites", refuse)
    entry = _entry("parquet", project) + "    sample: {per_stratum: 3, by: [risk, task]}\n"
    code, out, err = cli("validate", "-c", _config(project, entry), "--json")
    assert code == 0, err
    strata = _flat().groupby(["risk", "task"]).size()
    assert json.loads(out)["suites"] == {"tickets": int(strata.clip(upper=3).sum())}


def test_an_empty_sampled_source_is_refused(project, cli):
    _flat().head(0).to_parquet(project / "t.parquet")
    entry = ("  - name: t\n    source: {path: t.parquet}\n    columns: {prompt: text, expected: intent}\n"
             "    sample: {n: 5, by: [risk]}\n")
    _one_line_error(cli, _config(project, entry), "t.parquet", "no cases")


def test_a_hub_dataset_gives_the_same_sample_as_its_parquet_file(project, tmp_path_factory):
    from conftest import run_subprocess
    from test_suite_sources import ANSWER, FORMAT, _hub_cache

    home = tmp_path_factory.mktemp("hf_home")
    _hub_cache(home, "acme/tickets")
    _responses(project)
    columns = "columns: {id: ticket_id, messages: messages, expected: expected, tags: [domain, risk, task]}"
    sample = "    sample: {n: 9, seed: 5, by: [risk]}\n"
    entry = (f"  - name: tickets\n    source: {{hub: acme/tickets, split: validation}}\n"
             f"    {columns}\n    {ANSWER}\n    {FORMAT}\n{sample}")
    env = {"HF_HOME": str(home), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    out = run_subprocess("check", "-c", _config(project, entry, "hub.yaml"), "--run-id", "h", "--allow-pending",
                         "--no-progress", cwd=project, env=env)
    assert out.returncode in (0, 1, 3), out.stderr
    got = [json.loads(line)["case_id"] for line in (project / "reports/h/records.jsonl").read_text().splitlines()]
    want = [c.id for c in load_suite(load_config(_config(project, _entry("parquet", project) + sample)).suites[0],
                                     project)]
    assert got == want and len(got) == 9
