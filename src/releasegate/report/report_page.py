"""report.html, rendered as jinja2 renders templates/report.html.j2 (see report.page_codegen).
Written by scripts/compile_templates.py from the template: do not edit; run the script."""
# ruff: noqa
# mypy: ignore-errors
from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from .formatting import format_interval, format_metric, format_money, format_value
from .page_runtime import Undefined, attr, breakable, item, name, replace, text


def render(context: Mapping[str, Any]) -> str:
    """The page for `context` (the names the template reads)."""
    v_answered = name(context, 'answered')
    v_baseline = name(context, 'baseline')
    v_bounds_note = name(context, 'bounds_note')
    v_capacity = name(context, 'capacity')
    v_cases = name(context, 'cases')
    v_comparison = name(context, 'comparison')
    v_computed = name(context, 'computed')
    v_cost = name(context, 'cost')
    v_criteria = name(context, 'criteria')
    v_csp = name(context, 'csp')
    v_css = name(context, 'css')
    v_failed_criteria = name(context, 'failed_criteria')
    v_feature_sections = name(context, 'feature_sections')
    v_guard_lines = name(context, 'guard_lines')
    v_headline = name(context, 'headline')
    v_info = name(context, 'info')
    v_judge = name(context, 'judge')
    v_judged_by = name(context, 'judged_by')
    v_latency = name(context, 'latency')
    v_latency_source = name(context, 'latency_source')
    v_load_phase = name(context, 'load_phase')
    v_metrics = name(context, 'metrics')
    v_n_cases = name(context, 'n_cases')
    v_n_failing = name(context, 'n_failing')
    v_n_hidden = name(context, 'n_hidden')
    v_other_comparison = name(context, 'other_comparison')
    v_plots = name(context, 'plots')
    v_prefix_cache = name(context, 'prefix_cache')
    v_report = name(context, 'report')
    v_requests = name(context, 'requests')
    v_response_cache = name(context, 'response_cache')
    v_review = name(context, 'review')
    v_review_pending = name(context, 'review_pending')
    v_sequences = name(context, 'sequences')
    v_slices = name(context, 'slices')
    v_slices_source = name(context, 'slices_source')
    v_stability = name(context, 'stability')
    v_verdict = name(context, 'verdict')
    v_verdict_class = name(context, 'verdict_class')
    v_whatif = name(context, 'whatif')
    out: list[str] = []
    w = out.append
    def l1_folded(l2_t):
        out: list[str] = []
        w = out.append
        if attr(l2_t, 'full'):
            w('<details><summary><span class="text">')
            w(text(breakable(attr(l2_t, 'preview'))))
            w('</span> <span class="more">')
            w(text(attr(l2_t, 'chars')))
            w(' chars: show all</span></summary><div class="text">')
            w(text(breakable(attr(l2_t, 'full'))))
            w('</div></details>')
        else:
            w('<span class="text">')
            w(text(breakable(attr(l2_t, 'preview'))))
            w('</span>')
        return Markup("".join(out))
    w('<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<meta http-equiv="Content-Security-Policy" content="')
    w(text(v_csp))
    w('">\n<meta name="referrer" content="no-referrer">\n<meta name="viewport" content="width=device-width, initial-scale=1">\n<meta name="generator" content="releasegate">\n<title>releasegate ')
    if v_whatif:
        w('what-if ')
    w(text(v_verdict))
    w(' · ')
    w(text(attr(v_report, 'run_id')))
    w('</title>\n<style>\n')
    w(text(v_css))
    w('\n</style>\n</head>\n<body>\n<header class="top">\n  <div class="brand">releasegate</div>\n  <div class="run">run <code>')
    w(text(attr(v_report, 'run_id')))
    w('</code> · ')
    w(text(attr(v_info, 'created_at')))
    w('</div>\n</header>\n\n<main>\n')
    if v_whatif:
        w('<section class="banner whatif" id="whatif"><div class="verdict-text"><strong>')
        w(text(v_judged_by))
        w('</strong></div></section>\n')
    w('<section class="banner ')
    w(text(v_verdict_class))
    w('" id="verdict">\n  <div class="verdict-word">')
    if v_whatif:
        w('what-if: ')
    w(text(replace(v_verdict, '_', ' ')))
    w('</div>\n  <div class="verdict-text">\n    <div class="verdict-line">\n')
    if (v_verdict == 'PASS'):
        w('All ')
        w(text(len(v_criteria)))
        w(' criteria met.\n')
        if v_review_pending:
            w('<strong>Required human review is still pending</strong> (allowed by --allow-pending).')
    elif (v_verdict == 'FAIL'):
        w(text(len(v_failed_criteria)))
        w(' of ')
        w(text(len(v_criteria)))
        w(' criteria failed:\n')
        l4_items = list(v_failed_criteria)
        for l5_i, l3_c in enumerate(l4_items):
            w('<strong>')
            w(text(attr(l3_c, 'name')))
            w('</strong>')
            if (not (l5_i == len(l4_items) - 1)):
                w(', ')
        w('.\n')
    elif (v_verdict == 'NEEDS_REVIEW'):
        w('Automatic criteria allow it, but required human review is pending.\n')
    elif (v_verdict == 'TARGET_ERROR'):
        w('The target could not be run: ')
        w(text(attr(v_report, 'target_error')))
        w('.\n')
    elif attr(v_report, 'incomplete'):
        w('Not enough evidence to decide: ')
        w(text(attr(v_report, 'incomplete')))
        w('.\n')
    else:
        w('Not enough evidence to decide: at least one criterion had too few samples or no value.\n')
    w('    </div>\n    <div class="verdict-meta">exit code ')
    w(text(attr(v_report, 'exit_code')))
    w(' · target ')
    w(text(attr(v_report, 'target')))
    w(' · rubric ')
    w(text(attr(v_report, 'rubric')))
    if (v_judged_by and (not v_whatif)):
        w(' (')
        w(text(v_judged_by))
        w(')')
    if attr(v_report, 'counts'):
        w('      · ')
        w(text(attr(attr(v_report, 'counts'), 'cases')))
        w(' cases (')
        w(text(v_answered))
        if attr(attr(v_report, 'counts'), 'cached'):
            w('; ')
            w(text(attr(attr(v_report, 'counts'), 'cached')))
            w(' from the response cache, left out of latency and throughput')
        w(')')
        if attr(attr(v_report, 'counts'), 'errors'):
            w(', errors:\n')
            l8_items = list(attr(attr(attr(v_report, 'counts'), 'errors'), 'items')())
            for l9_i, (l6_k, l7_v) in enumerate(l8_items):
                w(text(l6_k))
                w(' × ')
                w(text(l7_v))
                if (not (l9_i == len(l8_items) - 1)):
                    w(', ')
    w('</div>\n')
    if v_baseline:
        w('<div class="verdict-meta">')
        w(text(v_baseline))
        w('</div>')
    if attr(v_report, 'client_saturated'):
        w('<div class="verdict-meta client-late">')
        w(text(attr(v_report, 'client_saturated')))
        w('</div>')
    w('  </div>\n</section>\n\n')
    if v_headline:
        w('<section class="cards" aria-label="key figures">\n')
        for l10_h in v_headline:
            w('  <div class="card"><div class="card-value">')
            w(text(attr(l10_h, 'value')))
            w('</div><div class="card-label">')
            w(text(attr(l10_h, 'label')))
            w('</div>\n    <div class="card-sub">n=')
            w(text(attr(l10_h, 'n')))
            if attr(l10_h, 'interval'):
                w(' · ')
                w(text(attr(l10_h, 'interval')))
            w('</div>\n')
            if attr(l10_h, 'source'):
                w('<div class="card-sub source">')
                w(text(attr(l10_h, 'source')))
                w('</div>')
            w('</div>\n')
        w('</section>\n')
    w('\n<nav class="toc">\n  <a href="#criteria">Criteria</a><a href="#latency">Latency</a><a href="#cost">Cost</a><a href="#slices">Slices</a>\n')
    if (v_comparison or v_other_comparison):
        w('<a href="#comparison">Comparison</a>')
    w('<a href="#review">Human review</a>\n  <a href="#cases">Cases')
    if v_n_failing:
        w(' (')
        w(text(v_n_failing))
        w(' failing)')
    w('</a><a href="#run">Run</a>\n</nav>\n\n<section id="criteria">\n  <h2>Criteria</h2>\n  <table class="data">\n    <thead><tr><th>criterion</th><th>metric</th><th class="num">threshold</th><th class="num">value</th>\n      <th class="num">bounds</th><th class="num">n</th><th>verdict</th><th>why</th></tr></thead>\n    <tbody>\n')
    for l11_c in v_criteria:
        w('      <tr class="')
        w(text(attr(l11_c, 'verdict')))
        w('">\n        <td class="name">')
        w(text(attr(l11_c, 'name')))
        w('</td>\n        <td><code>')
        w(text(attr(l11_c, 'metric')))
        w('</code>')
        if attr(l11_c, 'where'):
            w(' <span class="where">')
            w(text(attr(l11_c, 'where')))
            w('</span>')
        if attr(l11_c, 'source'):
            w('<div class="muted small source">')
            w(text(attr(l11_c, 'source')))
            w('</div>')
        w('</td>\n        <td class="num">')
        w(text(attr(l11_c, 'threshold_text')))
        w('</td>\n        <td class="num strong">')
        w(text(format_metric(attr(l11_c, 'metric'), attr(l11_c, 'value'))))
        w('</td>\n        <td class="num muted">')
        w(text(attr(l11_c, 'interval_text')))
        w('</td>\n        <td class="num">')
        w(text(attr(l11_c, 'n')))
        w('</td>\n        <td><span class="pill ')
        w(text(attr(l11_c, 'verdict')))
        w('">')
        w(text(attr(l11_c, 'verdict')))
        w('</span></td>\n        <td class="muted">')
        w(text(attr(l11_c, 'reason')))
        w('</td>\n      </tr>\n')
    w('    </tbody>\n  </table>\n')
    if v_bounds_note:
        w('<p class="muted">')
        w(text(v_bounds_note))
        w('</p>')
    if attr(v_report, 'verdict_reason'):
        w('<p>Why ')
        w(text(replace(v_verdict, '_', ' ')))
        w(': ')
        w(text(attr(v_report, 'verdict_reason')))
        w('</p>')
    if v_requests:
        w('<p class="muted">')
        w(text(v_requests))
        w('</p>')
    w('</section>\n\n<section id="latency">\n  <h2>Latency</h2>\n')
    if v_plots:
        w('  <figure class="plot">')
        w(text(attr(v_plots, 'cdf')))
        w("<figcaption>Distribution of each request's latency (cumulative). Dotted: P50,\n    dashed: P95, red: the rubric's threshold.</figcaption></figure>\n")
        if (not isinstance(attr(v_plots, 'split'), Undefined)):
            w('  <figure class="plot">')
            w(text(attr(v_plots, 'split')))
            w("<figcaption>Each request's end-to-end time split into prefill (time to first\n    token) and decode (the rest). In a batch, prefill includes the whole batch's prefill.</figcaption></figure>\n")
    else:
        w('  <p class="note">No latency was measured in this run (the ')
        w(text(attr(v_info, 'backend')))
        w(' backend measures none).</p>\n')
    if v_latency:
        w('  <p class="note source">Latency, throughput and cost are measured on: ')
        w(text(v_latency_source))
        w('.</p>\n  <table class="data narrow">\n    <thead><tr><th>latency, ms</th><th class="num">P50</th><th class="num">P95</th><th class="num">P99</th><th class="num">n</th></tr></thead>\n    <tbody>\n')
        for l12_row in v_latency:
            w('      <tr><td>')
            w(text(attr(l12_row, 'label')))
            w('</td>')
            for l13_v in item(l12_row, 'values'):
                w('<td class="num">')
                w(text(format_value(l13_v)))
                w('</td>')
            w('<td class="num">')
            w(text(attr(l12_row, 'n')))
            w('</td></tr>\n')
        w('    </tbody>\n  </table>\n')
    w('</section>\n\n<section id="cost">\n  <h2>Throughput and cost</h2>\n  <dl class="facts">\n    <div><dt>cost per 1M output tokens</dt><dd>')
    w(text((format_money(attr(attr(v_cost, 'per_1m'), 'value')) if attr(v_cost, 'per_1m') else '—')))
    w('\n')
    if (attr(v_cost, 'per_1m') and attr(attr(v_cost, 'per_1m'), 'note')):
        w('<small>')
        w(text(attr(attr(v_cost, 'per_1m'), 'note')))
        w('</small>')
    w('</dd></div>\n    <div><dt>cost of this run</dt><dd>')
    w(text((format_money(attr(attr(v_cost, 'total'), 'value')) if attr(v_cost, 'total') else '—')))
    w('\n')
    if (attr(v_cost, 'total') and attr(attr(v_cost, 'total'), 'note')):
        w('<small>')
        w(text(attr(attr(v_cost, 'total'), 'note')))
        w('</small>')
    w('</dd></div>\n    <div><dt>pricing</dt><dd>')
    if attr(v_cost, 'config'):
        l16_items = [(l14_k, l15_v) for (l14_k, l15_v) in attr(attr(v_cost, 'config'), 'items')() if (not (l15_v is None))]
        for l17_i, (l14_k, l15_v) in enumerate(l16_items):
            w(text(l14_k))
            w(': ')
            w(text(l15_v))
            if (not (l17_i == len(l16_items) - 1)):
                w(' · ')
    else:
        w('none configured')
    w('</dd></div>\n    <div><dt>system throughput</dt><dd>')
    if (attr(v_cost, 'throughput') and (not (attr(attr(v_cost, 'throughput'), 'value') is None))):
        w(text(format_value(attr(attr(v_cost, 'throughput'), 'value'))))
        w(' output tokens/s')
    else:
        w('—')
    w('</dd></div>\n    <div><dt>tokens</dt><dd>')
    w(text(attr('{:,}', 'format')(attr(v_cost, 'input_tokens'))))
    w(' input · ')
    w(text(attr('{:,}', 'format')(attr(v_cost, 'output_tokens'))))
    w(' output</dd></div>\n    <div><dt>generation time, quality cases</dt><dd>')
    w(text(format_value(attr(v_cost, 'generation_seconds'))))
    w(' s')
    if (not (attr(v_cost, 'load_seconds') is None)):
        w(' <small>(model load ')
        w(text(format_value(attr(v_cost, 'load_seconds'))))
        w(' s, not counted)</small>')
    w('</dd></div>\n  </dl>\n')
    if v_load_phase:
        w('  <h3>Load phase</h3>\n  <table class="data narrow">\n    <thead><tr>')
        for l18_col in attr(v_load_phase, 'columns'):
            w('<th>')
            w(text(l18_col))
            w('</th>')
        w('</tr></thead>\n    <tbody>')
        for l19_row in attr(v_load_phase, 'rows'):
            w('<tr>')
            for l20_v in l19_row:
                w('<td>')
                w(text(l20_v))
                w('</td>')
            w('</tr>')
        w('</tbody>\n  </table>\n')
    if v_prefix_cache:
        w('  <h3 id="prefix-cache">Prefix cache: warm vs cold</h3>\n  <ul>')
        for l21_line in v_prefix_cache:
            w('<li>')
            w(text(l21_line))
            w('</li>')
        w('</ul>\n')
    if v_response_cache:
        w('  <h3 id="response-cache">Response cache: hit rate and harmful hits</h3>\n  <ul>')
        for l22_line in attr(v_response_cache, 'lines'):
            w('<li>')
            w(text(l22_line))
            w('</li>')
        w('</ul>\n')
        if attr(v_response_cache, 'plot'):
            w('<figure class="plot">')
            w(text(attr(v_response_cache, 'plot')))
            w('<figcaption>Each simulated threshold: the\n    share of cases the cache answers (hit rate) and the share it answers wrongly, with its upper bound.</figcaption></figure>')
        w('  <table class="data">\n    <thead><tr>')
        for l23_col in attr(v_response_cache, 'columns'):
            w('<th>')
            w(text(l23_col))
            w('</th>')
        w('</tr></thead>\n    <tbody>')
        for l24_row in attr(v_response_cache, 'rows'):
            w('<tr>')
            for l25_v in l24_row:
                w('<td>')
                w(text(l25_v))
                w('</td>')
            w('</tr>')
        w('</tbody>\n  </table>\n')
        if attr(v_response_cache, 'wrong'):
            w("<p>The most dangerous answers the cache could serve at the deployment's threshold:</p>\n  <ul>")
            for l26_line in attr(v_response_cache, 'wrong'):
                w('<li>')
                w(text(l26_line))
                w('</li>')
            w('</ul>')
    if v_capacity:
        w('  <h3 id="capacity">Capacity at the latency objective</h3>\n  <ul>')
        for l27_line in attr(v_capacity, 'lines'):
            w('<li>')
            w(text(l27_line))
            w('</li>')
        w('</ul>\n')
        if attr(v_capacity, 'plot'):
            w('<figure class="plot">')
            w(text(attr(v_capacity, 'plot')))
            w("<figcaption>Each step of the sweep: P95 latency (dashed: the\n    objective) and the server's signals against the offered rate; dotted: the capacity.</figcaption></figure>")
        w('  <table class="data">\n    <thead><tr>')
        for l28_col in attr(v_capacity, 'columns'):
            w('<th>')
            w(text(l28_col))
            w('</th>')
        w('</tr></thead>\n    <tbody>')
        for l29_row in attr(v_capacity, 'rows'):
            w('<tr>')
            for l30_v in l29_row:
                w('<td>')
                w(text(l30_v))
                w('</td>')
            w('</tr>')
        w('</tbody>\n  </table>\n')
    w('</section>\n\n<section id="slices">\n  <h2>Slices</h2>\n')
    if attr(v_slices, 'rows'):
        if attr(v_slices, 'timed'):
            w('<p class="note source">Latency columns (TTFT, TPOT) of the slices are measured on: ')
            w(text(v_slices_source))
            if (v_slices_source != v_latency_source):
                w(', not on what the criteria were judged on (')
                w(text(v_latency_source))
                w(')')
            w('.</p>')
        w('  <table class="data">\n    <thead><tr><th>slice</th><th class="num">n</th>')
        for l31_col in attr(v_slices, 'columns'):
            w('<th class="num">')
            w(text(l31_col))
            w('</th>')
        w('</tr></thead>\n    <tbody>\n')
        for l32_row in attr(v_slices, 'rows'):
            w('      <tr><td>')
            w(text(attr(l32_row, 'slice')))
            w('</td><td class="num">')
            w(text(attr(l32_row, 'n')))
            w('</td>')
            for l33_col in attr(v_slices, 'columns'):
                w('<td class="num">')
                w(text(format_value(item(l32_row, l33_col))))
                w('</td>')
            w('</tr>\n')
        w('    </tbody>\n  </table>\n')
    else:
        w('<p class="note">No slices.</p>')
    w('  <details>\n    <summary>All metrics, all cases</summary>\n    <table class="data">\n      <thead><tr><th>metric</th><th class="num">value</th><th class="num">n</th><th class="num">bounds</th><th>meaning</th></tr></thead>\n      <tbody>\n')
    for (l34_name, l35_m, l36_meaning, l37_phased) in v_metrics:
        w('        <tr><td><code>')
        w(text(l34_name))
        w('</code></td><td class="num">')
        w(text(format_metric(l34_name, attr(l35_m, 'value'))))
        w('</td><td class="num">')
        w(text(attr(l35_m, 'n')))
        w('</td>\n          <td class="num muted">')
        w(text(format_interval(attr(l35_m, 'interval'))))
        w('</td><td class="muted">')
        w(text(l36_meaning))
        if attr(l35_m, 'note'):
            w(' (')
            w(text(attr(l35_m, 'note')))
            w(')')
        if l37_phased:
            w('; measured on: ')
            w(text(v_latency_source))
        w('</td></tr>\n')
    w('      </tbody>\n    </table>\n  </details>\n</section>\n\n')
    if v_comparison:
        w('<section id="comparison">\n  <h2>Comparison with the baseline</h2>\n  <p>')
        w(text(attr(v_comparison, 'baseline')))
        w('</p>\n  <p class="note">')
        w(text(attr(v_comparison, 'summary')))
        w('</p>\n  <table class="data">\n    <thead><tr>')
        l39_items = list(attr(v_comparison, 'columns'))
        for l40_i, l38_col in enumerate(l39_items):
            w('<th')
            if ((not (l40_i == 0)) and (not (l40_i == len(l39_items) - 1))):
                w(' class="num"')
            w('>')
            w(text(l38_col))
            w('</th>')
        w('</tr></thead>\n    <tbody>')
        l42_items = list(attr(v_comparison, 'rows'))
        for l43_i, l41_row in enumerate(l42_items):
            w('<tr class="')
            w(text(item(l41_row, -1)))
            w('">')
            l45_items = list(l41_row)
            for l46_i, l44_v in enumerate(l45_items):
                w('<td')
                if ((not (l46_i == 0)) and (not (l46_i == len(l45_items) - 1))):
                    w(' class="num"')
                w('>')
                w(text(l44_v))
                w('</td>')
            w('</tr>')
        w('</tbody>\n  </table>\n')
        if attr(v_comparison, 'slices'):
            w('  <h3>Per slice</h3>\n  <table class="data">\n    <thead><tr>')
            for l47_col in attr(v_comparison, 'slice_columns'):
                w('<th>')
                w(text(l47_col))
                w('</th>')
            w('</tr></thead>\n    <tbody>')
            for l48_row in attr(v_comparison, 'slices'):
                w('<tr class="')
                w(text(item(l48_row, -1)))
                w('">')
                for l49_v in l48_row:
                    w('<td>')
                    w(text(l49_v))
                    w('</td>')
                w('</tr>')
            w('</tbody>\n  </table>\n')
        if attr(v_comparison, 'notes'):
            w('<ul>')
            for l50_note in attr(v_comparison, 'notes'):
                w('<li>')
                w(text(l50_note))
                w('</li>')
            w('</ul>')
        w('</section>\n')
    elif v_other_comparison:
        w('<section id="comparison">\n  <h2>Comparison</h2>\n  <table class="data">\n    <thead><tr>')
        for l51_col in attr(v_other_comparison, 'columns'):
            w('<th>')
            w(text(l51_col))
            w('</th>')
        w('</tr></thead>\n    <tbody>')
        for l52_row in attr(v_other_comparison, 'rows'):
            w('<tr>')
            for l53_v in l52_row:
                w('<td>')
                w(text(l53_v))
                w('</td>')
            w('</tr>')
        w('</tbody>\n  </table>\n</section>\n')
    w('\n')
    if v_stability:
        w('<section id="stability">\n  <h2>Stable answers</h2>\n  <ul>')
        for l54_line in attr(v_stability, 'lines'):
            w('<li>')
            w(text(l54_line))
            w('</li>')
        w('</ul>\n')
        for (l55_title, l56_columns, l57_rows) in attr(v_stability, 'tables'):
            w('  <h3>')
            w(text(l55_title))
            w('</h3>\n  <table>\n    <thead><tr>')
            for l58_col in l56_columns:
                w('<th>')
                w(text(l58_col))
                w('</th>')
            w('</tr></thead>\n    <tbody>')
            for l59_row in l57_rows:
                w('<tr>')
                for l60_v in l59_row:
                    w('<td>')
                    w(text(l60_v))
                    w('</td>')
                w('</tr>')
            w('</tbody>\n  </table>\n')
        w('</section>\n')
    if v_judge:
        w('<section id="judge">\n  <h2>LLM judge</h2>\n  <ul>')
        for l61_line in attr(v_judge, 'lines'):
            w('<li>')
            w(text(l61_line))
            w('</li>')
        w('</ul>\n')
        if attr(v_judge, 'rows'):
            w('  <table class="data">\n    <thead><tr>')
            for l62_col in attr(v_judge, 'columns'):
                w('<th>')
                w(text(l62_col))
                w('</th>')
            w('</tr></thead>\n    <tbody>')
            for l63_row in attr(v_judge, 'rows'):
                w('<tr>')
                for l64_v in l63_row:
                    w('<td>')
                    w(text(l64_v))
                    w('</td>')
                w('</tr>')
            w('</tbody>\n  </table>\n')
        w('</section>\n')
    for (l65_title, l66_rows) in v_feature_sections:
        w('<section class="feature">\n  <h2>')
        w(text(l65_title))
        w('</h2>\n  <table class="data narrow"><tbody>')
        for (l67_label, l68_value) in l66_rows:
            w('<tr><th>')
            w(text(l67_label))
            w('</th><td>')
            w(text(l68_value))
            w('</td></tr>')
        w('</tbody></table>\n</section>\n')
    if v_sequences:
        w('<section id="confidence-sequences">\n  <h2>Confidence sequences</h2>\n')
        for l69_f in v_sequences:
            w('  <figure class="plot confidence-sequence" data-criterion="')
            w(text(attr(l69_f, 'name')))
            w('" data-op="')
            w(text(attr(l69_f, 'op')))
            w('" data-threshold="')
            w(text(attr(l69_f, 'threshold')))
            w('"\n    data-decided-at="')
            w(text(attr(l69_f, 'decided_at')))
            w('" data-verdict="')
            w(text(attr(l69_f, 'verdict')))
            w('" data-cases="')
            w(text(attr(l69_f, 'cases')))
            w('"\n    data-lower="')
            w(text(attr(l69_f, 'lower')))
            w('" data-upper="')
            w(text(attr(l69_f, 'upper')))
            w('">')
            w(text(attr(l69_f, 'svg')))
            w('<figcaption>')
            w(text(attr(l69_f, 'name')))
            w(': its running bounds\n    (valid at every case, each side at the level its decision spends) over the cases asked; red: the threshold')
            if attr(l69_f, 'decided_at'):
                w('; green: the case its e-process decided it (')
                w(text(attr(l69_f, 'verdict')))
                w(')')
            w('.</figcaption></figure>\n')
        w('</section>\n')
    if v_guard_lines:
        w('<section id="guard">\n  <h2>Guard models</h2>\n  <ul>')
        for l70_line in v_guard_lines:
            w('<li>')
            w(text(l70_line))
            w('</li>')
        w('</ul>\n</section>\n')
    w('\n<section id="review">\n  <h2>Human review</h2>\n')
    if v_review:
        w('  <table class="data narrow">\n    <thead><tr>')
        for l71_col in attr(v_review, 'columns'):
            w('<th>')
            w(text(l71_col))
            w('</th>')
        w('</tr></thead>\n    <tbody>')
        for l72_row in attr(v_review, 'rows'):
            w('<tr>')
            for l73_v in l72_row:
                w('<td>')
                w(text(l73_v))
                w('</td>')
            w('</tr>')
        w('</tbody>\n  </table>\n')
    elif (v_verdict == 'NEEDS_REVIEW'):
        w('  <p class="note warn">Human review is required and pending.</p>\n')
    else:
        w('  <p class="note">No human review is recorded for this run.</p>\n')
    w('</section>\n\n<section id="cases">\n  <h2>Cases</h2>\n  <input type="checkbox" id="only-failing" class="toggle"')
    if v_n_failing:
        w(' checked')
    w('>\n  <label for="only-failing" class="toggle-label">Show failing cases only\n    <span class="muted">(')
    w(text(v_n_failing))
    w(' of ')
    w(text(v_n_cases))
    w(' failing)</span></label>\n')
    if v_n_hidden:
        w('<p class="note">')
        w(text(v_n_hidden))
        w(' passing cases are not listed here; report.csv has every case.</p>')
    w('  <p class="muted source">Each case\'s TTFT and E2E are from the ')
    w(text(v_slices_source))
    w('.</p>\n  <table class="data cases">\n    <colgroup><col class="c-case"><col class="c-result"><col class="c-why"><col class="c-input"><col class="c-expected">\n      <col class="c-output"><col class="c-review"><col class="c-num"><col class="c-num"><col class="c-num"></colgroup>\n    <thead><tr><th>case</th><th>result</th><th>why</th><th class="text-col">input</th><th class="text-col">expected</th>\n      <th class="output-col">output</th><th>review</th>\n      <th class="num" title="')
    w(text(v_slices_source))
    w('">TTFT ms</th><th class="num">E2E ms</th><th class="num" title="output tokens">tokens</th></tr></thead>\n    <tbody>\n')
    for l74_case in v_cases:
        l75_c = attr(l74_case, 'row')
        w('      <tr class="case ')
        w(text(('pass' if attr(l75_c, 'passed') else 'fail')))
        w('">\n        <td class="case-id"><div class="id">')
        w(text(attr(l75_c, 'case_id')))
        w('</div><div class="muted small">')
        w(text(attr(l75_c, 'suite')))
        w('</div>\n')
        if attr(l74_case, 'tags'):
            w('<div class="tags">')
            for l76_t in attr(l74_case, 'tags'):
                w('<span class="tag">')
                w(text(breakable(l76_t, tag=True)))
                w('</span> ')
            w('</div>')
        w('</td>\n        <td><span class="pill ')
        w(text(('pass' if attr(l75_c, 'passed') else 'fail')))
        w('">')
        w(text(('pass' if attr(l75_c, 'passed') else 'fail')))
        w('</span>\n          <div class="checks">')
        for l77_r in attr(l75_c, 'results'):
            w('<div class="check ')
            w(text(('ok' if attr(l77_r, 'passed') else ('unknown' if (attr(l77_r, 'passed') is None) else 'bad'))))
            w('">')
            w(text(('✓' if attr(l77_r, 'passed') else ('?' if (attr(l77_r, 'passed') is None) else '✗'))))
            w(' ')
            w(text(attr(l77_r, 'check')))
            w('</div>')
        w('</div></td>\n        <td class="why">')
        for l78_w in attr(l75_c, 'why'):
            w('<div>')
            w(text(l78_w))
            w('</div>')
        w('</td>\n        <td class="input">')
        w(text(l1_folded(attr(l74_case, 'input'))))
        w('</td>\n        <td class="expected">')
        if attr(attr(l74_case, 'expected'), 'chars'):
            w(text(l1_folded(attr(l74_case, 'expected'))))
        else:
            w('<span class="muted">—</span>')
        w('</td>\n        <td class="output">')
        if (attr(l75_c, 'output') is None):
            w('<div class="muted">no output (')
            w(text(attr(l75_c, 'error')))
            w(')</div>\n')
            if attr(l75_c, 'error_message'):
                w('<div class="error-message"><span class="muted">server said:</span> <span class="text">')
                w(text(attr(l75_c, 'error_message')))
                w('</span></div>')
        else:
            w(text(l1_folded(attr(l74_case, 'output'))))
        w('</td>\n        <td class="reviews">')
        l80_items = list(attr(l75_c, 'reviews'))
        for l81_i, l79_r in enumerate(l80_items):
            w('<div class="review ')
            w(text(attr(l79_r, 'label')))
            w('"><span class="pill ')
            w(text(('pass' if (attr(l79_r, 'label') == 'approve') else 'fail')))
            w('">')
            w(text(attr(l79_r, 'label')))
            w('</span>\n          <span class="reviewer">')
            w(text(attr(l79_r, 'reviewer')))
            w('</span>')
            if attr(l79_r, 'reason'):
                w(': <span class="text reason">')
                w(text(attr(l79_r, 'reason')))
                w('</span>')
            w('</div>')
        if not l80_items:
            w('<span class="muted">—</span>')
        w('</td>\n        <td class="num">')
        w(text(format_value(attr(l75_c, 'ttft_ms'))))
        w('</td>\n        <td class="num">')
        w(text(format_value(attr(l75_c, 'e2e_ms'))))
        w('</td>\n        <td class="num">')
        w(text(format_value(attr(l75_c, 'output_tokens'))))
        w('</td>\n      </tr>\n')
    w('    </tbody>\n  </table>\n</section>\n\n<section id="run">\n  <h2>Run</h2>\n  <dl class="facts">\n    <div><dt>run id</dt><dd><code>')
    w(text(attr(v_info, 'run_id')))
    w('</code></dd></div>\n    <div><dt>status</dt><dd>')
    w(text(attr(v_info, 'status')))
    w('</dd></div>\n    <div><dt>started / finished</dt><dd>')
    w(text(attr(v_info, 'created_at')))
    w(' / ')
    w(text((attr(v_info, 'finished_at') or '—')))
    w('</dd></div>\n    <div><dt>target</dt><dd>')
    w(text(attr(v_report, 'target')))
    w(' <small>(')
    w(text(attr(v_info, 'backend')))
    w(' backend)</small></dd></div>\n    <div><dt>computed</dt><dd>')
    w(text(v_computed))
    w('</dd></div>\n    <div><dt>versions</dt><dd>')
    l84_items = list(attr(attr(v_info, 'versions'), 'items')())
    for l85_i, (l82_k, l83_v) in enumerate(l84_items):
        w(text(l82_k))
        w(' ')
        w(text(l83_v))
        if (not (l85_i == len(l84_items) - 1)):
            w(' · ')
    if not l84_items:
        w('—')
    w('</dd></div>\n    <div><dt>host</dt><dd>')
    l88_items = list(attr(attr(v_info, 'host'), 'items')())
    for l89_i, (l86_k, l87_v) in enumerate(l88_items):
        w(text(l86_k))
        w(': ')
        w(text(l87_v))
        if (not (l89_i == len(l88_items) - 1)):
            w(' · ')
    if not l88_items:
        w('—')
    w('</dd></div>\n  </dl>\n</section>\n</main>\n<footer>Generated by releasegate from the record of run <code>')
    w(text(attr(v_report, 'run_id')))
    w('</code> (run.json, records.jsonl,\n  report.json); <code>releasegate report RUN_DIR --format html</code> renders it again.</footer>\n</body>\n</html>')
    return "".join(out)
