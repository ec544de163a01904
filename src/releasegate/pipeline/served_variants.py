"""The served-variant plan (`variants:` in the config, run by `releasegate matrix`): each variant's server started
(or targeted), the same suites and load run against it, every run judged again and compared with the first
variant, and the cheapest one that qualifies chosen.

Per variant, under <matrix dir>/<variant>/: a full run (records, report in every format) and `variant.json`:
what was served (the files with their sha256, from `export.variant_files`), the server's peak memory (the
high-water mark of its processes' resident memory), and its speculative counters (draft tokens proposed and
accepted, read from /metrics before and after the run). The comparison is `servers`' (`compare_servers`): each
run judged again from its records by its own rubric snapshot, runs with other generation, load or objective
settings refused, paired quality on the shared cases with the non-inferiority margin. The choice is
`server_ranking.choose_cheapest`.

A run of a variant never reads releasegate's response cache: a started server's address is a fresh port, which a
later server of another variant may get, and an answer cached under it would be another model's.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, ValidationError
from rich.console import Console

from ..border.files import replace_file
from ..border.limits import same_origin
from ..border.structured import stored_json
from ..decision.choice import unserved
from ..errors import InputError, TargetError
from ..export.llamacpp import Speculative, launch_server
from ..export.variant_files import ServedFiles, llamacpp_files, vllm_files
from ..export.vllm import start_server as start_vllm
from ..gate.load_quality import draw_variation, load_figures
from ..gate.paired_comparison import DEFAULT_MARGINS
from ..inputs.config import Config
from ..inputs.rubric import Rubric
from ..inputs.suites import Case
from ..inputs.variant_plan import VariantPlan, VariantSpec
from ..model_base import Model
from ..record.decided_results import VariantsResult, typed
from ..record.records import RunDir
from ..record.run_parts import problem_line
from ..record.stage_timing import Timing
from ..report.variants import VARIANT_FILES, render_variants
from ..run.server_scrape import acceptance, fetch_metrics, parse_prometheus, speculative_counts
from .check import run_check
from .check_options import CheckOptions
from .server_ranking import choose_among
from .server_rows import Number, Parity, RankedRow, ServedRecord, TargetRow, UnservedRow, VariantRow
from .servers import compared_targets

__all__ = ["run_served_variants", "served_result"]

VARIANT_FILE = "variant.json"
FILES_DIR = ".variant-files"
"""Under the output directory: exported files, one directory per content key, reused across matrix runs."""


def run_served_variants(config: Config, rubric: Rubric, cases: list[Case], *, root: Path,
                        options: CheckOptions) -> dict[str, Any]:
    """Run every variant of `config.variants`, compare, choose; write variants.json and the reports in `root`."""
    console = options.console
    plan = config.variants
    assert plan is not None
    cache = config.output_dir / FILES_DIR
    runs: dict[str, RunDir | str] = {}
    for spec in plan.variants:
        console.print(f"[bold]variant {spec.name}[/]: {spec.describe()}", soft_wrap=True)
        runs[spec.name] = _run_variant(config, rubric, cases, spec, root=root, cache=cache, options=options)
    ref = plan.reference.name
    if not isinstance(runs[ref], RunDir):
        raise TargetError(f"the reference variant {ref} could not be served: {runs[ref]}; nothing can be compared "
                          "with it")
    greedy = not config.generation.get("temperature")  # 0 or unset: the openai client sends 0
    result = served_result(plan, runs, root, allow_pending=options.allow_pending, greedy=greedy)
    for fmt, name in VARIANT_FILES.items():
        replace_file(root / name, render_variants(result, fmt).encode("utf-8"), what=name)
    return result


def _run_variant(config: Config, rubric: Rubric, cases: list[Case], spec: VariantSpec, *, root: Path, cache: Path,
                 options: CheckOptions) -> RunDir | str:
    """The variant's judged run directory, or why its server could not be had (a line, for its row)."""
    console = options.console
    out = root / spec.name
    logs = root / "server-logs"
    logs.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        files = _files(spec, cache)
        server = _start(spec, files, logs / f"{spec.name}.log")
    except (OSError, RuntimeError, TimeoutError, ValueError, ImportError) as exc:
        return _unserved(spec, out, f"its server could not be started: {_one_line(exc)}", console)
    try:
        base_url, model, root_url = _address(spec, server)
        before = _counters(root_url)
        vcfg = dataclasses.replace(config, output_dir=root, target=_served_target(config, spec, base_url, model, files),
                                   cost=_cost(config, spec))
        try:
            served = {"backend": "openai", "base_url": base_url, "model": model}
            how = dataclasses.replace(options, run_id=spec.name, use_cache=False, target_overrides=served,
                                      timing=Timing(), ends_command=False)
            run, _ = run_check(vcfg, rubric, cases, how)
        except TargetError as exc:  # it did not answer, or stopped answering: a row of its own, the plan goes on
            return _unserved(spec, out, f"it could not be run: {_one_line(exc)}", console)
        after = _counters(root_url)
        peak = server.peak_memory_bytes() if server is not None else None
    finally:
        if server is not None:
            server.stop()
    record = {"variant": spec.as_record(), "files": files.manifest if files else [],
              "model_bytes": files.model_bytes if files else None, "model_sha256": files.model_sha256 if files else None,
              "peak_memory_bytes": peak, "speculative": acceptance(before, after) if before and after else None,
              "served_s": time.perf_counter() - started}
    run.write_json(VARIANT_FILE, record)
    return run


def _unserved(spec: VariantSpec, out: Path, why: str, console: Console) -> str:
    """Say and record why a variant has no run (its row's reason)."""
    console.print(f"variant {spec.name}: {why}", markup=False, soft_wrap=True)
    out.mkdir(parents=True, exist_ok=True)
    replace_file(out / VARIANT_FILE, json.dumps({"variant": spec.as_record(), "error": why}, indent=2).encode("utf-8"),
                 what=VARIANT_FILE)
    return why


def _files(spec: VariantSpec, cache: Path) -> ServedFiles | None:
    merged = spec.lora == "merged"
    if spec.server == "llamacpp":
        draft = spec.speculative.draft if spec.speculative and spec.speculative.kind == "draft" else None
        return llamacpp_files(spec.base, spec.adapter, quant=spec.quant, merged=merged, gguf=spec.gguf, draft=draft,
                              cache=cache)
    if spec.server == "vllm":
        assert spec.base is not None
        return vllm_files(spec.base, spec.adapter, merged=merged, cache=cache)
    return None


def _start(spec: VariantSpec, files: ServedFiles | None, log: Path) -> Any:
    """The started server (with base_url, root_url, model, stop(), peak_memory_bytes()); None for an endpoint."""
    if files is None:
        return None
    context = _context(spec)
    if spec.server == "llamacpp":
        speculative = None
        if spec.speculative is not None:
            speculative = Speculative(kind=spec.speculative.kind, draft=files.draft, n_max=spec.speculative.n_max)
        return launch_server(files.model, files.loras, speculative=speculative, n_parallel=spec.parallel,
                             threads=spec.threads, slot_ctx=context, alias=spec.name, log_path=log)
    extra: tuple[str, ...] = ()
    if spec.speculative is not None:  # vLLM's prompt lookup ("ngram"); a draft model is refused by the plan
        extra = ("--speculative-config", json.dumps({"method": "ngram", "num_speculative_tokens": spec.speculative.n_max,
                                                     "prompt_lookup_max": 4}))
    loras = {f"{spec.name}-lora": files.loras[0]} if files.loras else None
    return start_vllm(files.model, loras, alias=spec.name, max_num_seqs=spec.parallel, max_model_len=context,
                        threads=spec.threads, log_path=log, extra_args=extra)


def _context(spec: VariantSpec) -> int:
    """Tokens of context per request slot: the model's window (its config's max_position_embeddings), at most 8192."""
    config = stored_json(spec.base / "config.json", what="model config") if spec.base else None
    window = config.get("max_position_embeddings") if isinstance(config, dict) else None
    return min(int(window), 8192) if isinstance(window, int) and window > 0 else 4096


def _address(spec: VariantSpec, server: Any) -> tuple[str, str, str]:
    """(base_url, the model name requests send, the server's root for /metrics)."""
    if server is None:
        assert spec.base_url is not None and spec.model is not None
        return spec.base_url, spec.model, spec.base_url.rstrip("/").removesuffix("/v1")
    model = server.model
    if spec.server == "vllm" and spec.adapter is not None and spec.lora == "per_request":
        model = f"{spec.name}-lora"  # vLLM chooses the LoRA module by the request's model name
    return server.base_url, model, server.root_url


def _served_target(config: Config, spec: VariantSpec, base_url: str, model: str, files: ServedFiles | None = None) -> Any:
    """The config's target pointed at the variant's server: its client settings kept when it is an endpoint
    already, a plain chat client otherwise; llama.cpp's per-request LoRA sent as its `lora` field. The files the
    launcher handed a started server are the run's served files, observed (hashed into its manifest)."""
    t = config.target
    extra = {k: v for k, v in t.extra_body.items() if k != "lora"} if t.backend == "openai" else {}
    if spec.server == "llamacpp" and spec.adapter is not None and spec.lora == "per_request":
        extra["lora"] = [{"id": 0, "scale": 1.0}]
    fields: dict[str, Any] = {"backend": "openai", "base_url": base_url, "model": model, "extra_body": extra, "base": None,
                    "adapter": None, "merge": False, "quantize": None, "draft": None, "responses": None}
    if t.backend != "openai":
        fields.update(mode="chat", concurrency=spec.parallel, api_key_env=None, headers={})
    if spec.server != "endpoint" or not same_origin(base_url, t.base_url):
        # a started server takes no credential, and the target's go to the target's own origin only: its key,
        # its headers and every extra_body field holding one (at any depth: the field its mask changes)
        masked = t.masked()["extra_body"]
        fields.update(api_key_env=None, headers={},
                      extra_body={k: v for k, v in extra.items() if k == "lora" or masked.get(k) == v})
    if files is not None:
        handed = (files.model, *files.loras, *((files.draft,) if files.draft is not None else ()))
        fields.update(served_files=handed, served_as="observed")
    return dataclasses.replace(t, **fields)


def _cost(config: Config, spec: VariantSpec) -> Any:
    if spec.hourly_usd is None or config.cost is None or config.cost.mode != "self_hosted":
        return config.cost
    return dataclasses.replace(config.cost, hourly_usd=spec.hourly_usd)


def _counters(root_url: str) -> dict[str, Any] | None:
    """The server's speculative counters now; None when its /metrics cannot be read."""
    try:
        return speculative_counts(parse_prometheus(fetch_metrics(root_url + "/metrics", {})))
    except Exception:  # noqa: BLE001 - a server without /metrics has no counters; the run stands without them
        return None


def served_result(plan: VariantPlan, runs: dict[str, RunDir | str], root: Path, *, allow_pending: bool = False,
                  greedy: bool = True) -> dict[str, Any]:
    """The comparison of the variants' runs and the choice (the report's one data structure); `allow_pending` as
    the runs were judged (`matrix --allow-pending`)."""
    ran = {name: run for name, run in runs.items() if isinstance(run, RunDir)}
    targets = compared_targets([run.path for run in ran.values()], min_parity_share=plan.min_parity_share,
                               margin=plan.margin, allow_pending=allow_pending, fewest=1)
    by_name = dict(zip(ran, targets))
    rows = [_variant_row(spec, runs[spec.name], by_name.get(spec.name), greedy and _same_model(spec, plan.reference))
            for spec in plan.variants]
    margin = _margin(rows, plan)
    rows = [_under_load(row, ran[row.variant], margin, greedy) if isinstance(row, VariantRow) else row for row in rows]
    # the decision: verdict, exit code, choice
    ranked = [RankedRow.model_validate(row, from_attributes=True) for row in rows]
    picked = choose_among(ranked, reference=plan.reference.name)
    for row, read in zip(rows, ranked):
        row.why_not, row.eligible, row.chosen = read.why_not, read.why_not is None, row.variant == picked.chosen
    slo = targets[0].slo  # one config: every variant was swept against the same objective
    return typed(VariantsResult, {"kind": "served_variants", "reference": plan.reference.name, **picked.as_dict(),
            "margin": margin, "min_parity_share": plan.min_parity_share,
            "slo": slo, "dir": str(root), "variants": [row.as_json() for row in rows]})


def _under_load(row: VariantRow, run: RunDir, margin: float | None, greedy: bool) -> VariantRow:
    """Quality under load beside the quality phase's; a variant flipping past the margin is out."""
    records = run.read_records()
    return row.model_copy(update={
        **load_figures(records, run.read_records("load.jsonl", required=False)),
        "flip_margin": margin or DEFAULT_MARGINS["accuracy"],
        "flip_variation": None if greedy else _variation(run, records)})


def _variation(run: RunDir, records: list[Any]) -> float | None:
    """At temperature > 0, how often the variant's own draws disagree (the change sampling makes alone)."""
    return draw_variation(run.read_info(), records, run.read_records("draws.jsonl", required=False))


def _same_model(spec: VariantSpec, ref: VariantSpec) -> bool:
    """The variant serves the reference's model, files and server, speculation (and scheduling) aside."""
    return dataclasses.replace(spec, name=ref.name, speculative=ref.speculative, parallel=ref.parallel,
                               threads=ref.threads, hourly_usd=ref.hourly_usd) == ref


def _row(spec: VariantSpec, run: RunDir | str, target: dict[str, Any] | None, parity_binds: bool) -> dict[str, Any]:
    """A variant's row in its JSON form (a target row of `compare_servers`' result, or None: not served)."""
    return _variant_row(spec, run, None if target is None else _TargetRead.model_validate(target), parity_binds).as_json()


def _variant_row(spec: VariantSpec, run: RunDir | str, target: TargetRow | _TargetRead | None,
                 parity_binds: bool) -> VariantRow | UnservedRow:
    served = _read_variant(run) if isinstance(run, RunDir) else ServedRecord()
    lora = spec.lora if spec.adapter is not None else None  # as the run records its variant
    head: dict[str, Any] = {"variant": spec.name, "server": spec.server, "quant": spec.quant or _gguf_type(served), "lora": lora,
            "speculative": spec.speculative.kind if spec.speculative else None, "described": spec.describe()}
    if target is None:  # the server could not be had: no run, no figures
        decided = unserved(str(run))
        return UnservedRow(**head, verdict=str(decided.verdict), exit_code=decided.exit_code,
                           verdict_reason=decided.reason, why_not=str(run))
    t = target
    counts = _Speculation.model_validate(served.speculative or {}) if spec.speculative else _Speculation()
    model = served.model_entry()
    return VariantRow(
        **head, **t.model_dump(include=set(_FIGURES)), capacity_at_least=bool(t.capacity_at_least),
        sweep=t.sweep, verdict=t.verdict, verdict_reason=t.verdict_reason, run_id=t.run_id, run_dir=t.run_dir,
        comparable=t.comparable, model_file=model.file if model else None, model_bytes=served.model_bytes,
        model_sha256=served.model_sha256, peak_memory_bytes=served.peak_memory_bytes,
        acceptance_rate=counts.acceptance_rate, draft_tokens=counts.draft_tokens,
        accepted_tokens=counts.accepted_tokens, parity=t.parity, latency_source=t.latency_source,
        unchecked=t.unchecked, review_waived=t.review_waived, capacity_break_rps=t.capacity_break_rps,
        cost_mode=t.cost_mode, e2e_ms_p95_bounds=t.e2e_ms_p95_bounds, client_lateness_ms=t.client_lateness_ms,
        # a draft may change speed, never the greedy text: a broken server otherwise
        speculation_changed=_speculation_changed(spec, t.parity, parity_binds), why_not=None)


_FIGURES = ("accuracy", "format_compliance", "forbidden_rate", "error_rate", "ttft_ms_p50", "ttft_ms_p95",
            "ttft_ms_p99", "tpot_ms_p50", "tpot_ms_p95", "tpot_ms_p99", "e2e_ms_p50", "e2e_ms_p95", "e2e_ms_p99",
            "output_tokens_per_s", "cost_per_1m_output_tokens", "capacity_rps", "cost_per_1m_at_capacity")
"""A target's figures a variant's row shows as they are (`capacity_at_least` as a yes or no)."""


class _Speculation(Model):
    """variant.json's speculative counters (`run.server_scrape.acceptance`)."""

    model_config = ConfigDict(extra="allow")

    acceptance_rate: Number | None = None
    draft_tokens: Number | None = None
    accepted_tokens: Number | None = None


class _TargetRead(RankedRow):
    """A target row handed in as JSON (a target of `compare_servers`' result), as a variant's row reads it."""

    run_id: str
    run_dir: str
    verdict_reason: str = ""
    accuracy: Number | None = None
    format_compliance: Number | None = None
    forbidden_rate: Number | None = None
    error_rate: Number | None = None
    ttft_ms_p50: Number | None = None
    ttft_ms_p95: Number | None = None
    ttft_ms_p99: Number | None = None
    tpot_ms_p50: Number | None = None
    tpot_ms_p95: Number | None = None
    tpot_ms_p99: Number | None = None
    e2e_ms_p50: Number | None = None
    e2e_ms_p95: Number | None = None
    e2e_ms_p99: Number | None = None
    output_tokens_per_s: Number | None = None
    latency_source: dict[str, Any] | None = None
    unchecked: str | None = None


def _speculation_changed(spec: VariantSpec, parity: Parity | None, binds: bool) -> str | None:
    """Why a speculative variant is not to be trusted: under greedy decoding (`binds`: and when the reference
    serves the same model without speculation) it changed answers the model gives without it."""
    if not binds or spec.speculative is None or parity is None or parity.identical_outputs >= parity.shared_cases:
        return None
    changed = parity.shared_cases - parity.identical_outputs
    return (f"speculation changed {changed} of {parity.shared_cases} greedy answers of the same model: a draft "
            "may change speed, never the text")


def _read_variant(run: RunDir) -> ServedRecord:
    path = run.path / VARIANT_FILE
    data = stored_json(path, what="variant.json")
    try:
        return ServedRecord.model_validate(data) if isinstance(data, dict) else ServedRecord()
    except ValidationError as exc:  # edited since the plan wrote it: its figures would be another's
        raise InputError(f"variant.json is not as releasegate writes it: {problem_line(exc)}", file=path,
                         hint="run the variant plan again") from None


def _gguf_type(served: ServedRecord) -> str | None:
    """A prebuilt GGUF's type, as its manifest entry read it."""
    model = served.model_entry()
    return str(model.type).lower() if model and model.type else None


def _margin(rows: list[VariantRow | UnservedRow], plan: VariantPlan) -> float | None:
    margins = [r.parity.margin for r in rows if r.parity and r.parity.margin is not None]
    return margins[0] if margins else plan.margin


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."
