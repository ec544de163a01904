"""Corpus cases for the rules of the one decision module (`releasegate.decision`), each through the CLI on real
files where the rule is about a surface, each with the verdict and exit code it must get: a run on part of its
suites, high-risk domains however spelled, a re-gate over changed inputs, a what-if over a run that did not pass,
answers reused from the response cache, and comparisons with a reference that is cut or failing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_jsonl
from releasegate.record.records import CaseRecord, Timing, Tokens

RIGHT = '{"intent": "billing"}'


def make(tmp_path: Path, n: int = 30, *, domain: str | None = None, review: str = "review: {required_domains: []}",
         limit: str = "", cache: bool = False) -> Path:
    """A replay project of `n` cases answered right, judged on accuracy alone."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    tags = {"domain": domain} if domain else {}
    write_jsonl(tmp_path / "suite.jsonl", [{"id": f"c{i}", "prompt": f"ticket {i}", "expected": {"intent": "billing"},
                                            "tags": tags} for i in range(n)])
    write_jsonl(tmp_path / "responses.jsonl", [{"id": f"c{i}", "output": RIGHT} for i in range(n)])
    (tmp_path / "rubric.yaml").write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.9}\n" + review + "\n")
    (tmp_path / "c.yaml").write_text(
        "target: {backend: replay, responses: responses.jsonl}\n"
        f"suites:\n  - {{path: suite.jsonl, answer: {{type: json_fields, fields: [intent]}}{limit}}}\n"
        "rubric: rubric.yaml\n" + ("cache: {path: cache.sqlite}\n" if cache else ""))
    return tmp_path / "c.yaml"


def check(cli, config: Path, *args) -> tuple[int, dict]:
    code, out, _ = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json", *args)
    return code, json.loads(out)


# --- a run on part of its suites speaks for that part only ------------------------------------------------------

def test_the_whole_suite_passes(cli, tmp_path):
    code, report = check(cli, make(tmp_path))
    assert (code, report["verdict"]) == (0, "PASS") and report["population"]["cuts"] == []


@pytest.mark.parametrize(("limit", "args", "named"), [
    ("", ("--limit", "10"), "--limit 10"),
    (", limit: 10", (), "suites[0].limit: 10"),
    ("", ("--set", "suites[0].limit=10"), "by --set suites[0].limit"),
])
def test_a_cut_however_made_is_inconclusive_and_named(cli, tmp_path, limit, args, named):
    code, report = check(cli, make(tmp_path, limit=limit), *args)
    assert (code, report["verdict"]) == (3, "INCONCLUSIVE"), report["verdict_reason"]
    assert named in report["verdict_reason"] and any(named in c for c in report["population"]["cuts"])


def test_a_limit_above_the_suite_is_no_cut(cli, tmp_path):
    code, report = check(cli, make(tmp_path, n=30), "--limit", "50")
    assert (code, report["verdict"]) == (0, "PASS") and report["population"]["cuts"] == []


# --- high-risk domains, however spelled ---------------------------------------------------------------------

@pytest.mark.parametrize("domain", ["Medical", "healthcare", "clinical", "Legal", "law", "support", "Customer Service"])
def test_a_high_risk_domain_spelled_otherwise_still_needs_review(cli, tmp_path, domain):
    code, report = check(cli, make(tmp_path, domain=domain, review=""))
    assert (code, report["verdict"]) == (3, "NEEDS_REVIEW"), report["verdict_reason"]
    assert f"domain={domain}" in report["review"]


def test_validate_warns_of_a_domain_it_cannot_tell(cli, tmp_path):
    code, out, _ = cli("validate", "-c", make(tmp_path, domain="Medicall", review=""))
    assert code == 0 and "warning: domain: 'Medicall' is not a domain releasegate knows" in " ".join(out.split())
    code, out, _ = cli("validate", "-c", make(tmp_path / "known", domain="billing", review=""))
    assert code == 0 and "warning" not in out


# --- a re-gate or a what-if ---------------------------------------------------------------------------------------

def test_a_regate_after_the_suite_changed_is_not_pass(cli, tmp_path):
    config = make(tmp_path)
    assert check(cli, config)[0] == 0
    suite = tmp_path / "suite.jsonl"
    suite.write_text(suite.read_text().replace('"billing"', '"refund"', 1))
    code, out, _ = cli("gate", tmp_path / "reports" / "r", "--json")
    report = json.loads(out)
    assert (code, report["verdict"]) == (3, "INCONCLUSIVE") and "suite.jsonl changed" in report["verdict_reason"]


def test_a_whatif_passes_only_over_a_run_that_passed(cli, tmp_path):
    config = make(tmp_path)
    (tmp_path / "rubric.yaml").write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 1.01}\n"
                                          "review: {required_domains: []}\n")
    assert cli("check", "-c", config, "--no-progress")[0] == 2  # no model can pass it: refused before the run
    (tmp_path / "rubric.yaml").write_text("criteria:\n  - {metric: accuracy, op: '<=', threshold: 0.5}\n"
                                          "review: {required_domains: []}\n")
    assert check(cli, config)[0] == 1  # the run's own verdict: FAIL
    lax = tmp_path / "lax.yaml"
    lax.write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\nreview: {required_domains: []}\n")
    code, out, _ = cli("gate", tmp_path / "reports" / "r", "--rubric", lax, "--json")
    report = json.loads(out)
    assert (code, report["verdict"], report["judged_by"]["whatif_verdict"]) == (3, "INCONCLUSIVE", "PASS")


# --- answers reused from the response cache -----------------------------------------------------------------------

def test_cached_answers_carry_the_attempts_that_produced_them(tmp_path):
    from releasegate.backends import Generation, Request
    from releasegate.backends.response_cache import ResponseCache

    cache = ResponseCache(tmp_path / "cache.sqlite", fingerprint="f", generation={})
    answered = Generation("yes", timing=Timing(attempts=3, retried_errors=["http_5xx", "timeout"]))
    cache.put_many([(Request("a", None, "q"), answered)])
    assert cache.get(Request("a", None, "q")).produced_by == ["http_5xx", "timeout", None]


def test_an_old_cache_file_opens_and_its_entries_know_no_attempts(tmp_path):
    import sqlite3

    from releasegate.backends import Request
    from releasegate.backends.response_cache import ResponseCache, cache_key

    db = sqlite3.connect(tmp_path / "old.sqlite")
    db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, created_at REAL NOT NULL, "
               "text TEXT NOT NULL, tokens TEXT NOT NULL)")
    request = Request("a", None, "q")
    db.execute("INSERT INTO responses VALUES (?, 'f', 0, 'yes', ?)", (cache_key("f", request, {}), Tokens().model_dump_json()))
    db.commit()
    db.close()
    got = ResponseCache(tmp_path / "old.sqlite", fingerprint="f", generation={}).get(request)
    assert got.text == "yes" and got.produced_by is None


def _cached(i: int, produced: list | None) -> CaseRecord:
    return CaseRecord(case_id=f"c{i}", suite="s", input={"prompt": "p"}, output=RIGHT, cached=True, produced_by=produced)


def test_the_failures_behind_cached_answers_count_and_too_few_requests_decide_nothing():
    from releasegate.decision.criterion import CriterionEvidence, decide_criterion
    from releasegate.inputs.rubric import Criterion
    from releasegate.record.metrics import compute_metric

    carried = [_cached(i, ["http_5xx", None]) for i in range(10)]
    value = compute_metric("error_rate", carried, {}, {"all_records": True})
    assert (value.value, value.n) == (0.5, 20)  # the producing session failed one request in two
    unknown = [_cached(i, None) for i in range(10)] + [CaseRecord(case_id="f", suite="s", input={}, output=RIGHT)]
    value = compute_metric("error_rate", unknown, {}, {"all_records": True})
    assert (value.value, value.n) == (0.0, 1)
    result = decide_criterion(CriterionEvidence(Criterion(name="e", metric="error_rate", op="<=", threshold=0.5), value))
    assert result.verdict == "insufficient" and "at least 3" in result.reason  # one fresh request says nothing


def test_a_whatif_re_derives_the_cache_probe_under_its_own_rules(cli, tmp_path):
    from test_cache_probe_check import make_project

    cases = []
    for i in range(10):
        cases += [(f"Refund {i} please", "refund", "refund"), (f"REFUND {i}  please", "refund", "refund"),
                  (f"Bill {i} wrong", "billing", "billing"), (f"bill {i} WRONG", "shipping", "shipping")]
    config = make_project(tmp_path, 0.1, cases)
    code, out, _ = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json")
    assert json.loads(out)["response_cache_probe"]["rows"][0]["harmful_hits"] == 20
    # forbid the shipping answer: a shipping case's own answer now fails, so serving it the billing answer does no
    # harm the model would not have done; only the billing cases stay harmed
    strict = tmp_path / "strict.yaml"
    strict.write_text((tmp_path / "rubric.yaml").read_text() + "forbidden:\n  - {category: x, phrases: [shipping]}\n")
    code, out, _ = cli("gate", tmp_path / "reports" / "r", "--rubric", strict, "--json")
    row = json.loads(out)["response_cache_probe"]["rows"][0]
    assert (row["harmful_hits"], row["hittable"]) == (10, 40)
