"""The response-cache probe in every report format: summary lines (the deployment's threshold, the TTL assumed,
the recommended threshold, time-sensitive warnings, what embeddings cost), a row per threshold, and the most
dangerous wrong hits (new question, cached question, both answers)."""

from __future__ import annotations

from ..record.cache_probe_report import CacheProbeRow, CacheProbeSection, CacheWrongHit
from .formatting import format_value
from .paired_models import read_section

__all__ = ["cache_probe_lines", "cache_probe_table", "wrong_hit_lines", "deployed_row"]

_COLUMNS = ["threshold", "hits", "hit rate", "could hit", "right", "harmful", "harmful share", "upper bound",
            "unknown", "within / across groups", "tokens saved (in / out)", "USD saved", "stale time-sensitive"]


def deployed_row(probe: CacheProbeSection) -> CacheProbeRow | None:
    """The row at the deployment's threshold (exact mode: the only one)."""
    if probe.mode == "exact":
        return probe.rows[0] if probe.rows else None
    return next((r for r in probe.rows if r.threshold == probe.threshold), None)


def cache_probe_lines(probe: CacheProbeSection | None) -> list[str]:
    """What the simulated cache does at the deployment's threshold, and the threshold to use."""
    if probe is None:
        return []
    row = deployed_row(probe)
    where = "exact match (whitespace and case normalised)" if probe.mode == "exact" else f"similarity >= {probe.threshold:g}"
    ttl = f"TTL {format_value(probe.ttl_s)} s" if probe.ttl_s is not None else "no TTL (entries never expire)"
    lines = [f"response cache ({where}, {ttl}, one case every {format_value(probe.arrival_interval_s)} s)"]
    if row is not None:
        lines[0] += (f": {row.hits} of {row.n} cases hit ({_pct(row.hit_rate)}); of the {_could(row)} that could "
                     f"hit, {_harmful(row)} harmful ({_pct(row.harmful_share)}, upper bound "
                     f"{_pct(row.wrong_hit_upper)} at {row.confidence:g}), {row.right_hits if row.right_hits is not None else '-'} "
                     f"right, {row.across_group} across paraphrase groups"
                     + (f", {row.unknown_hits} not checkable" if row.unknown_hits else ""))
        if row.wrong_hits:
            lines.append(f"{row.wrong_hits} case(s) could be served a wrong answer ({_pct(row.wrong_hit_rate)} of the "
                         "cases), by any neighbour at the threshold whichever reaches the cache first")
        if row.stale_time_sensitive:
            lines.append(f"warning: {row.stale_time_sensitive} time-sensitive case(s) could be served an answer older "
                         f"than {format_value(probe.time_sensitive_max_age_s)} s ({_ttl(probe.ttl_s)}), "
                         f"counted harmful: {', '.join(row.stale_cases)}")
    if probe.error:
        lines[0] += f": no figures, the probe failed: {probe.error}"
    rec = probe.recommended
    if rec is not None:
        lines.append("recommended threshold: " + (f"{rec.threshold:g} ({rec.why})" if rec.threshold is not None
                                                   else f"none ({rec.why})"))
    if probe.embeddings:
        from .run_models import EmbeddingsUsed

        e = read_section(EmbeddingsUsed, probe.embeddings, "response_cache_probe.embeddings")
        lines.append(f"embeddings: {e.source} ({e.computed} texts embedded in "
                     f"{format_value(e.seconds)} s, {format_value(e.latency_ms_p50)} ms per request P50, "
                     f"{format_value(e.tokens)} tokens)")
    return lines


def cache_probe_table(probe: CacheProbeSection) -> tuple[list[str], list[list[str]]]:
    """One row per threshold, highest first."""
    rows = []
    for r in probe.rows:
        rows.append(["exact" if r.threshold is None else f"{r.threshold:g}", str(r.hits), _pct(r.hit_rate),
                     str(_could(r)), "-" if r.right_hits is None else str(r.right_hits), str(_harmful(r)),
                     _pct(r.harmful_share), _pct(r.wrong_hit_upper), str(r.unknown_hits),
                     f"{r.within_group} / {r.across_group}",
                     f"{r.tokens_saved.get('input', 0)} / {r.tokens_saved.get('output', 0)}",
                     format_value(r.cost_saved_usd), str(r.stale_time_sensitive)])
    return _COLUMNS, rows


def wrong_hit_lines(probe: CacheProbeSection | None, limit: int = 5) -> list[str]:
    """The most dangerous wrong answers the cache could serve at the deployment's threshold, one line each."""
    row = deployed_row(probe) if probe is not None else None
    if row is None:
        return []
    return [f"{w.case_id} ({w.question!r}) could be served {w.cached_case_id}'s answer ({w.cached_question!r}, "
            f"similarity {w.similarity:.4f}{'' if w.within_group else ', across groups'}): {w.cached_answer!r} instead "
            f"of {w.answer!r}{_how_many(w)}{'' if w.harmful else ' (the model was wrong too)'}"
            f"{' (stale: time-sensitive)' if w.stale else ''}" for w in row.wrong[:limit]]


def _how_many(w: CacheWrongHit) -> str:
    """How many of the answers the case could be served are wrong for it."""
    if w.wrong_neighbours is None or w.donors is None:
        return ""
    return f"; {w.wrong_neighbours} of the {w.donors} answer(s) it could be served wrong"


def _ttl(ttl_s: float | None) -> str:
    return "entries never expire" if ttl_s is None else f"the TTL, {format_value(ttl_s)} s, exceeds it"


def _could(row: CacheProbeRow) -> int:
    return row.hittable if row.hittable is not None else row.hits


def _harmful(row: CacheProbeRow) -> int:
    return row.harmful_hits if row.harmful_hits is not None else row.wrong_hits


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"
