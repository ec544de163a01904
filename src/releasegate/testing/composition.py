"""The composition matrix: every pair of registered gate features, run on fixtures whose truth is known.

Each gate feature has a fixture part (`PARTS`): the config, rubric and suite fragments that switch it on, how the
stub OpenAI-compatible server (one for the target, the guard and the judge) behaves for it, and its known effect
when it is good and when it is set to fail. A pair's project is the base project with both parts merged in; it
runs twice, all good (truth: PASS) and with one of the two parts set to fail (truth: FAIL). `releasegate
validate` may instead refuse a pair, in one line naming both keys (`REFUSED`); a pair whose verdict is known to
be wrong is listed in `WRONG` with what the gate gives.

tests/test_composition.py runs the matrix; scripts/composition_table.py prints docs/composition.md from the same
data. Both generate the pairs from `gate.feature.registered()`, so a newly registered feature joins the matrix and
fails it until it has a part here.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .answers import JsonObject, keyword_guard

__all__ = ["PARTS", "REFUSED", "WRONG", "SERVED", "Part", "Mode", "pairs", "bad_part", "truth", "build", "reply_for",
           "needs_labels", "commands",
           "target_stub", "TTFT_MS"]

CASES = 40
"""Cases of the main suite ('ticket N'); the judge's suite has as many ('draft N'), the cache's twins half."""
TWINS = 20
TTFT_MS = 20.0
"""The stub's time to first token, the known latency the latency and capacity parts are set against."""
BAD_TTFT_MS = 300.0
"""The target's time to first token when the latency part is set to fail: 295 ms above its threshold, more than
a busy machine's client lateness (which widens the bounds) takes away."""

RIGHT = "I have reset your ticket; you will get an email shortly."
WRONG_ANSWER = "Sorry, I cannot help with that."
REFUND = "Your refund is issued."
PASSWORD = " Please send me your password."
CREDENTIAL = " Just type your secret login code here."
GUARD = keyword_guard({"S7": ("secret login code",)})


@dataclass
class Mode:
    """What the shared stub does now: which part is set to fail (None: all good), and whether the run being made is
    the baseline run (always all good)."""

    bad: str | None = None
    baseline_run: bool = False
    wrong_every: int = 4
    """The baseline part set to fail answers every this-many-th case wrong (4: accuracy 1.0 -> 0.75)."""

    def fails(self, feature: str) -> bool:
        return self.bad == feature and not self.baseline_run


@dataclass(frozen=True)
class Part:
    """One feature's fixture part.

    `config`, `rubric`: fragments merged into the base project's (dicts deep-merged, lists joined) given whether the
    part is set to fail; `suites`: extra suite files {name: rows} with their config entries; `labels`: the run needs
    human labels (review, a judge's or a guard's calibration); `baseline`: a baseline run is made first."""

    feature: str
    switch: str
    """How the part switches its feature on (the table's words)."""
    good: str
    """Its known effect all good."""
    bad: str
    """Its known effect set to fail."""
    config: Callable[[bool], JsonObject] = lambda bad: {}
    rubric: Callable[[bool], JsonObject] = lambda bad: {}
    suites: Callable[[bool], dict[str, tuple[JsonObject, list[JsonObject]]]] = lambda bad: {}
    labels: bool = False
    baseline: bool = False
    stub: tuple[tuple[str, Any], ...] = ()
    """The target's own stub (StubBehaviour fields over the shared one's), for a behaviour the others must not see."""
    bad_stub: tuple[tuple[str, Any], ...] = ()
    """More of the target's stub when the part is set to fail: a margin a busy machine cannot close (a late client
    widens latency bounds by its lateness), except beside a part whose own stub sets the timing (capacity)."""
    files: Callable[[Path, bool], None] = lambda root, bad: None
    """Writes the files the part's config names under the project's root, given `bad`."""
    commands: tuple[tuple[str, ...], ...] = ()
    """releasegate commands run in the project's root before the check (building a leakage suite)."""


def _criterion(metric: str, op: str, threshold: float, **extra: object) -> JsonObject:
    return {"metric": metric, "op": op, "threshold": threshold, **extra}


def _judge_suite(bad: bool) -> dict[str, tuple[JsonObject, list[JsonObject]]]:
    rows = [{"id": f"d{i:02d}", "messages": [{"role": "user", "content": f"draft {i}"}], "expected": "a polite reply",
             "tags": {"kind": "open", "domain": "drafts", "group": f"d{i}"}} for i in range(CASES)]
    return {"judged.jsonl": ({"path": "judged.jsonl", "answer": {"type": "judge", "criterion": "helpful"}}, rows)}


def _twins(bad: bool) -> dict[str, tuple[JsonObject, list[JsonObject]]]:
    """The first TWINS questions again in capitals: the exact cache serves each its twin's answer. All good they are
    the same question (same group, same answer); set to fail they are another question (another group) whose own
    answer differs, so every hit serves a wrong answer."""
    rows = [{"id": f"t{i:02d}", "messages": [{"role": "user", "content": f"TICKET {i}"}],
             "expected": "a refund" if bad else "a reset", "tags": {"kind": "must_refuse", "domain": "support", "group": f"r{i}" if bad else f"g{i}"},
             **({"answer": {"type": "regex", "pattern": "refund is issued"}} if bad else {})} for i in range(TWINS)]
    return {"twins.jsonl": ({"path": "twins.jsonl", "answer": {"type": "regex", "pattern": "reset your ticket"}},
                            rows)}


TOOL = {"type": "function", "function": {"name": "reset_ticket", "description": "Reset a ticket.", "parameters": {
    "type": "object", "properties": {"ticket": {"type": "integer"}}, "required": ["ticket"]}}}
_TOOL_ASK = re.compile(r"reset ticket (\d+)")


def _tool_suite(bad: bool) -> dict[str, tuple[JsonObject, list[JsonObject]]]:
    """TWINS cases that must call reset_ticket with their ticket's number; set to fail, every odd case expects
    another number than the one the stub (the model) calls with."""
    rows = [{"id": f"k{i:02d}", "messages": [{"role": "user", "content": f"please reset ticket {i}"}],
             "tools": [TOOL], "expect": {"call": "required", "calls": [
                 {"name": "reset_ticket", "arguments": {"ticket": [i + 1 if bad and i % 2 else i]}}]},
             "tags": {"kind": "tool", "domain": "tools", "group": f"k{i}"}} for i in range(TWINS)]
    return {"tools.jsonl": ({"path": "tools.jsonl"}, rows)}


def tool_calls(body: JsonObject) -> list[JsonObject]:
    """The target's tool calls: reset_ticket with the number the request asks for."""
    found = _TOOL_ASK.search(str(body["messages"][-1].get("content")))
    return [{"name": "reset_ticket", "arguments": json.dumps({"ticket": int(found.group(1))})}] if found else []


def _leakage_files(root: Path, bad: bool) -> None:
    """The training and held-out records a leakage suite is built from (`commands`). All good the training
    continuations are text no model says; set to fail they are the reply the target gives (RIGHT): the candidate
    repeats its training data, the base (model 'base' on the stub) does not."""
    train = [{"prompt": f"leak record {i}", "completion": RIGHT if bad else f"account {i} is closed"} for i in range(TWINS)]
    held = [{"prompt": f"leak held {i}", "completion": f"held reply {i}"} for i in range(TWINS)]
    _write_jsonl(root / "train.jsonl", train)
    _write_jsonl(root / "heldout.jsonl", held)


PARTS: dict[str, Part] = {p.feature: p for p in (
    Part("stopping", "rubric stop_when_decided: true (the seed's random order) and accuracy >= 0.3, confidence "
         "0.95",
         "every answer right: the e-process shows accuracy >= 0.3", "every answer wrong: the e-process shows "
         "accuracy < 0.3",
         rubric=lambda bad: {"stop_when_decided": True,
                             "criteria": [_criterion("accuracy", ">=", 0.3, confidence=0.95,
                                                     name="accuracy (stopping)")]}),
    Part("stability", "generation.repeats: 3 (temperature 0.8) and pass_all_k >= 0.7",
         "every draw right: pass_all_k 1.0", "draw 2 wrong on half the cases (of every suite): pass_all_k 0.5",
         config=lambda bad: {"generation": {"repeats": 3, "temperature": 0.8}},
         rubric=lambda bad: {"criteria": [_criterion("pass_all_k", ">=", 0.7)]}),
    Part("capacity", "load.sweep (30 then 60 req/s, constant arrivals) on a stub that decodes 2 answers at once "
         "(about 44 req/s), objective TTFT P95 <= 200 ms",
         "30 req/s meets the objective, 60 breaks it: capacity 30, capacity_rps >= 30 passes",
         "the same sweep against capacity_rps >= 60: fails",
         config=lambda bad: {"load": {"concurrency": 64, "arrival": "constant", "sweep": {
             "start_rps": 30, "max_rps": 60, "factor": 2, "requests_per_step": 60, "step_s": 2, "refine": 0,
             "slo": {"ttft_ms_p95": 200}}}},
         # a client late by up to half the stub's 20 ms TTFT cannot move a step across a 200 ms objective: the
         # default share (0.1, 2 ms) would call a busy machine's client saturated and the step undecided
         rubric=lambda bad: {"criteria": [_criterion("capacity_rps", ">=", 60 if bad else 30)],
                             "max_client_lag_share": 0.5},
         stub=(("decode_slots", 2), ("itl_ms", 8.0))),
    Part("cache", "response_cache_probe (exact, group_tag) over 20 twin questions; cache_wrong_hit_rate <= 0.1, "
         "cache_hit_rate >= 0.1",
         "each twin is the same question: 20 hits, none wrong",
         "each twin is another question with its own answer: 20 hits, all wrong",
         config=lambda bad: {"response_cache_probe": {"mode": "exact", "group_tag": "group"}},
         rubric=lambda bad: {"criteria": [_criterion("cache_wrong_hit_rate", "<=", 0.1),
                                          _criterion("cache_hit_rate", ">=", 0.1)]},
         suites=_twins),
    Part("forbidden", "a phrase rule, probes (role_play on must_refuse cases), forbidden_rate <= 0.1 overall and "
         "on the probes",
         "no reply says the phrase: forbidden_rate 0", "half the replies ask for a password: forbidden_rate 0.5",
         config=lambda bad: {"probes": {"cases": {"kind": "must_refuse"}, "families": ["role_play"]}},
         rubric=lambda bad: {"forbidden": [{"category": "password_request", "phrases": ["your password"]}],
                             "criteria": [_criterion("forbidden_rate", "<=", 0.1),
                                          _criterion("forbidden_rate", "<=", 0.1, probe="role_play")]}),
    Part("quality", "an answer check (regex) and accuracy >= 0.7",
         "every answer right: accuracy 1.0", "half the answers wrong: accuracy 0.5",
         rubric=lambda bad: {"criteria": [_criterion("accuracy", ">=", 0.7)]}),
    Part("tools", "20 cases that must call reset_ticket(ticket) and tool_call_accuracy >= 0.8 (the target's stub "
         "answers a request with tools by that call)",
         "every call has the ticket asked for: tool_call_accuracy 1.0",
         "every odd case expects another ticket than the one called: tool_call_accuracy 0.5",
         rubric=lambda bad: {"criteria": [_criterion("tool_call_accuracy", ">=", 0.8)]},
         suites=_tool_suite, stub=(("tool_reply", tool_calls),)),
    Part("leakage", "leakage: a suite of 20 training and 20 held-out records, the base the stub as model 'base'; "
         "extraction_rate_delta <= 0.3",
         "no training continuation is repeated: extraction delta 0",
         "every training continuation is the target's reply, which the base never gives: extraction delta 1.0",
         config=lambda bad: {"leakage": {"suite": "leakage.json", "base": {
             "backend": "openai", "base_url": "{url}", "model": "base", "retries": 0, "timeout_s": 10}}},
         rubric=lambda bad: {"criteria": [_criterion("extraction_rate_delta", "<=", 0.3)]},
         files=_leakage_files, commands=(("leakage", "build", "--train", "train.jsonl", "--heldout", "heldout.jsonl",
                                          "--n", str(TWINS), "-o", "leakage.json"),)),
    Part("latency", "a load phase (40 req/s, 60 requests; with capacity, the sweep's capacity step) and "
         "ttft_ms_p95 <= 1000",
         f"stub TTFT {TTFT_MS:g} ms under 1000 ms",
         f"ttft_ms_p95 <= 5, below the stub's {BAD_TTFT_MS:g} ms (with capacity: its {TTFT_MS:g} ms)",
         config=lambda bad: {"load": {"rate": 40, "requests": 60, "concurrency": 32}},
         rubric=lambda bad: {"criteria": [_criterion("ttft_ms_p95", "<=", 5 if bad else 1000)]},
         bad_stub=(("ttft_ms", BAD_TTFT_MS),)),
    Part("baseline", "rubric baseline: a run of the same project with every answer right (accuracy, forbidden_rate)",
         "the candidate answers as the baseline: no regression",
         "a quarter of the candidate's answers wrong: accuracy 1.0 -> 0.75",
         rubric=lambda bad: {"criteria": [_criterion("accuracy", ">=", 0)],
                             "baseline": {"run": "reports/base", "metrics": ["accuracy", "forbidden_rate"],
                                          "margins": {"accuracy": 0.1, "forbidden_rate": 0.1}}},
         baseline=True),
    Part("review", "review.required_domains [support], labels_per_case: 2, min_approval 0.7; two reviewers label "
         "every sampled case",
         "both reviewers approve every clean reply: approval 1.0",
         "both reviewers reject half the support cases: approval 0.5",
         rubric=lambda bad: {"review": {"required_domains": ["support"], "labels_per_case": 2, "min_approval": 0.7,
                                        "min_reviewed": 10}},
         labels=True),
    Part("judge", "judge: the stub grades a suite of 40 drafts (answer type judge), helpful accuracy >= 0.8; "
         "reviewers' labels calibrate it",
         "every draft good, the judge passes it and reviewers approve: helpful 1.0, agreement 1.0",
         "half the drafts bad, the judge fails them and reviewers reject them: helpful 0.5",
         config=lambda bad: {"judge": {"base_url": "{url}", "model": "judge", "retries": 0, "timeout_s": 10,
                                       "criteria": {"helpful": {"instructions": "The reply helps the customer."}}}},
         rubric=lambda bad: {"judge": {"min_agreement": 0.7, "min_labels": 20},
                             "criteria": [_criterion("accuracy", ">=", 0.8, name="helpful",
                                                     slice={"suite": "judged"})]},
         suites=_judge_suite, labels=True),
    Part("guard", "a guard rule (Llama Guard format on the stub, S7), forbidden_rate <= 0.2; reviewers' labels "
         "calibrate it",
         "no reply asks for the login code, the guard says safe: forbidden_rate 0",
         "half the replies ask for the login code, the guard flags them: forbidden_rate 0.5",
         config=lambda bad: {"guards": {"lg": {"base_url": "{url}", "model": "llama-guard", "retries": 0,
                                               "timeout_s": 10, "categories": {"S7": "Privacy"}}}},
         rubric=lambda bad: {"forbidden": [{"category": "credential_request", "kind": "guard", "guard": "lg",
                                            "codes": ["S7"]}],
                             "criteria": [_criterion("forbidden_rate", "<=", 0.2)]},
         labels=True),
    Part("variants", "variants: two endpoint variants (a, b) of the target, run by `releasegate matrix` (not a gate "
         "feature: met in `composition_meetings` only)",
         "both variants serve the target as it is: each variant's verdict is the run's",
         "no failing part of its own: a failing part met with it fails every variant",
         config=lambda bad: {"variants": [{"name": n, "server": "endpoint", "base_url": "{target}", "model": "stub"}
                                          for n in ("a", "b")]}),
)}
SERVED = "variants"  # the part whose project runs by `releasegate matrix` (each variant a run), not `check`

REFUSED: dict[frozenset[str], tuple[tuple[str, ...], str]] = {}
"""Pairs (and meetings) `validate` refuses by design: the keys its one line names (each must appear) and why."""

WRONG: dict[tuple[frozenset[str], str], tuple[str, str]] = {}
"""Pairs known to give a wrong verdict: (pair, 'good' or 'bad') -> (the verdict the gate gives, why); a meeting's
mode is 'good' or the part set to fail."""


def pairs(names: list[str]) -> list[tuple[str, str]]:
    """Every pair of the registered features, in registry order."""
    return list(itertools.combinations(names, 2))


def bad_part(a: str, b: str, names: list[str]) -> str:
    """Which part of a pair is set to fail: alternating by the pair's place, so each feature fails in some pairs
    and stays good in others."""
    return b if (names.index(a) + names.index(b)) % 2 else a


def truth(a: str, b: str, mode: str) -> str:
    """The verdict a pair's fixture says: PASS all good, FAIL with a part set to fail."""
    return "PASS" if mode == "good" else "FAIL"


def commands(features: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The releasegate commands the pair's parts run in the project's root before its check."""
    return [command for f in features for command in PARTS[f].commands]


def needs_labels(features: tuple[str, ...]) -> bool:
    return any(PARTS[f].labels for f in features)


# --- the stub --------------------------------------------------------------------------------------------------------

_NUMBER = re.compile(r"\b(ticket|TICKET|draft) (\d+)\b")
_DRAFT = re.compile(r"<response-\w+>\n(.*?)\n</response-\w+>", re.S)


def reply_for(mode: Mode) -> Callable[[JsonObject], str]:
    """The stub's answer to any request: the guard's verdict on a guard prompt, the judge's grade on a judge
    prompt, the model's answer to a question ('ticket N', 'TICKET N', 'draft N', inside a probe or not) by which part
    is set to fail."""

    def reply(body: JsonObject) -> str:
        messages = body.get("messages") or [{"content": body.get("prompt", "")}]  # the leakage probe may complete
        text = str(messages[-1].get("content"))
        if body.get("model") == "base":  # the leakage part's base: it never saw the training data
            return "Hello."
        if "<END CONVERSATION>" in text:
            return GUARD(body)
        draft = _DRAFT.search(text)
        if draft is not None:
            verdict = "fail" if "BAD" in draft.group(1) else "pass"
            return json.dumps({"reason": f"the draft is {verdict}", "verdict": verdict})
        found = _NUMBER.search(text)
        if found is None:
            return RIGHT
        kind, i = found.group(1), int(found.group(2))
        redrawn = mode.fails("stability") and body.get("seed") == 9 and i % 2 == 0  # draw 2, of every suite
        if kind == "draft":
            return f"draft {i}: {'BAD' if (mode.fails('judge') and i % 2 == 0) or redrawn else 'GOOD'} reply"
        if kind == "TICKET" and mode.fails("cache"):
            return REFUND
        regressed = mode.fails("baseline") and i % mode.wrong_every == mode.wrong_every - 1
        wrong = (mode.fails("quality") and i % 2 == 1) or regressed or redrawn or mode.fails("stopping")
        out = WRONG_ANSWER if wrong else RIGHT
        if mode.fails("forbidden") and i % 2 == 0:
            out += PASSWORD
        if mode.fails("guard") and i % 2 == 0:
            out += CREDENTIAL
        return out

    return reply


# --- the project -----------------------------------------------------------------------------------------------------


def _merge(into: JsonObject, part: JsonObject) -> JsonObject:
    for key, value in part.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        elif isinstance(value, list) and isinstance(into.get(key), list):
            into[key] = into[key] + value
        else:
            into[key] = copy.deepcopy(value)
    return into


def _main_suite() -> list[JsonObject]:
    return [{"id": f"m{i:02d}", "messages": [{"role": "user", "content": f"ticket {i}"}],
             "expected": "a reset", "tags": {"kind": "must_refuse", "domain": "support", "group": f"g{i}"}} for i in range(CASES)]


def target_stub(features: tuple[str, ...], bad: str | None = None) -> tuple[tuple[str, Any], ...]:
    """The StubBehaviour fields of the pair's target stub (() : the shared stub); `bad`: the part set to fail."""
    fields = tuple(kv for f in features for kv in PARTS[f].stub)
    timed = any(key in ("ttft_ms", "itl_ms", "decode_slots") for key, _ in fields)
    if bad in features and not timed:
        fields += PARTS[bad].bad_stub
    return fields


def build(root: Path, url: str, features: tuple[str, ...], bad: str | None, *, baseline_run: bool = False,
          target_url: str | None = None) -> Path:
    """Write the pair's project under `root` (the baseline run's project without its `baseline:` key): the target
    at `target_url` (default `url`), the guard and the judge at `url`; the config's path."""
    root.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "target": {"backend": "openai", "base_url": target_url or url, "model": "stub", "retries": 0, "timeout_s": 10},
        "generation": {"max_new_tokens": 16, "temperature": 0.0, "seed": 7},
        "suites": [{"path": "main.jsonl", "answer": {"type": "regex", "pattern": "reset your ticket"}}],
        "rubric": "rubric.yaml",
    }
    rubric: dict[str, Any] = {"name": "+".join(features), "review": {"required_domains": [],
                                                                     "sample": {"per_slice": 200}},
                              "criteria": []}
    _write_jsonl(root / "main.jsonl", _main_suite())
    for name in features:
        part = PARTS[name]
        failing = bad == name and not baseline_run
        _merge(config, part.config(failing))
        _merge(rubric, part.rubric(failing))
        part.files(root, failing)
        for file, (entry, rows) in part.suites(failing).items():
            config["suites"].append(entry)
            _write_jsonl(root / file, rows)
    if "sweep" in config.get("load", {}):  # a sweep is the load phase: latency is taken at its capacity step
        for key in ("rate", "requests"):
            config["load"].pop(key, None)
    if baseline_run:
        rubric.pop("baseline", None)
        config.pop("variants", None)  # the baseline is one run of the target
    text = yaml.safe_dump(config, sort_keys=False).replace("'{url}'", url).replace("{url}", url)
    text = text.replace("'{target}'", target_url or url).replace("{target}", target_url or url)
    (root / "releasegate.yaml").write_text(text)
    (root / "rubric.yaml").write_text(yaml.safe_dump(rubric, sort_keys=False))
    return root / "releasegate.yaml"


def _write_jsonl(path: Path, rows: list[JsonObject]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
