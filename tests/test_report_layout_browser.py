"""The HTML pages laid out by a real browser (Debian's headless chromium) at a 1280 px wide viewport, measured:
no table wider than its card (the cases table, the served-variants table), tags as separate boxes, and compact
JSON wrapped between its tokens, never inside one.

The pages forbid every script (their CSP); the measuring copy is the page with the CSP removed and one script
added at its end that measures the laid-out elements and writes the figures into the DOM, which --dump-dom
returns. The layout measured is the page's own: the script runs after it and changes nothing before measuring."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

from releasegate.report.variants import render_variants
from test_false_pass import Run, ok
from test_reports_browser import browse, chromium  # noqa: F401  (the fixture)
from test_variants_report import _result, _variant

WIDTH = 1280
TAGS = {"domain": "medical", "lang": "ko", "task": "triage", "kind": "must_refuse_bait", "pair": "p0"}
OUTPUT = json.dumps({"intent": "refund", "priority": "high", "reply": "환불이 진행 중입니다: we are sorry that your card "
                     "was charged twice, a refund of 42.50 EUR is on its way", "labels": ["refund", "card", "urgent"],
                     "escalate": False, "confidence": 0.8734}, ensure_ascii=False, separators=(",", ":"))
MEASURE = r"""
(function () {
  function inner(el) {  // the right edge of an element's content box
    var st = getComputedStyle(el), r = el.getBoundingClientRect();
    return r.right - parseFloat(st.paddingRight) - parseFloat(st.borderRightWidth);
  }
  var out = {page: document.documentElement.scrollWidth, tables: [], tags: [], tagText: [], broken: []};
  document.querySelectorAll('table').forEach(function (t) {
    out.tables.push(t.getBoundingClientRect().right - inner(t.closest('section')));
  });
  document.querySelectorAll('td.case-id .tags').forEach(function (div) {
    out.tagText.push(div.textContent.trim());
    var boxes = Array.prototype.map.call(div.querySelectorAll('.tag'), function (s) { return s.getBoundingClientRect(); });
    boxes = boxes.filter(function (b) { return b.width > 0; });  // a row the failing-only filter hides has none
    for (var i = 1; i < boxes.length; i++) {  // the space between two tags: beside it, or the line below
      var a = boxes[i - 1], b = boxes[i];
      out.tags.push(Math.abs(b.top - a.top) < 2 ? b.left - a.right : b.top - a.bottom);
    }
  });
  var token = /[^\s,:{}\[\]]+/g;  // a key, a word of a string, a number, a literal: what a reader reads as one
  document.querySelectorAll('td.expected .text, td.output .text').forEach(function (el) {
    var cell = el.closest('td'), room = inner(cell) - cell.getBoundingClientRect().left;
    var walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT), node, m;
    while ((node = walker.nextNode())) {
      while ((m = token.exec(node.data))) {
        var range = document.createRange(), lines = {};
        range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
        Array.prototype.forEach.call(range.getClientRects(), function (q) { if (q.width > 0) lines[Math.round(q.top)] = 1; });
        if (Object.keys(lines).length > 1 && range.getBoundingClientRect().width < room) out.broken.push(m[0]);
      }
    }
  });
  var pre = document.createElement('pre'); pre.id = 'measured'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
"""


def measure(browser: str, page: Path, tmp_path: Path) -> dict:
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page.read_text())
    copy = tmp_path / f"measured-{page.name}"
    copy.write_text(html.replace("</body>", f"<script>{MEASURE}</script></body>"))
    dom = browse(browser, copy, tmp_path / f"profile-{page.stem}", "--dump-dom", f"--window-size={WIDTH},3000")
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    return json.loads(unescape(found.group(1)))


def _cases_page(tmp_path: Path, cli) -> Path:
    records = []
    for i in range(40):
        record = ok(i, output=OUTPUT if i < 12 else '{"intent": "billing"}', tags={**TAGS, "pair": f"p{i // 2}"})
        record["expected"] = {"intent": "billing", "priority": "high", "escalate": True, "labels": ["card", "refund"]}
        record["input"] = {"messages": [{"role": "system", "content": "You are the triage desk. Answer in JSON."},
                                        {"role": "user", "content": "가슴이 답답하고 왼팔이 저려요 " * 3}]}
        records.append(record)
    path = Run(records).build(tmp_path)
    cli("gate", path)
    return path / "report.html"


def test_the_cases_table_fits_1280_px_with_tags_apart_and_json_whole(tmp_path, cli, chromium):  # noqa: F811
    figures = measure(chromium, _cases_page(tmp_path, cli), tmp_path)
    assert figures["page"] <= WIDTH  # no horizontal scrolling
    assert figures["tables"] and max(figures["tables"]) <= 0.5, figures["tables"]  # every table inside its card
    assert figures["tagText"][0] == "domain=medical lang=ko task=triage kind=must_refuse_bait pair=p0"
    assert figures["tags"] and min(figures["tags"]) >= 2, figures["tags"]  # boxes apart, never glued nor overlapping
    assert figures["broken"] == []  # no key, string or number cut across two lines


def test_the_served_variants_table_fits_its_card(tmp_path, chromium):  # noqa: F811
    result = _result()
    result["variants"] += [_variant(f"extra-{i}") for i in range(5)]  # eight variants, every figure of each
    page = tmp_path / "variants.html"
    page.write_text(render_variants(result, "html"))
    figures = measure(chromium, page, tmp_path)
    assert figures["page"] <= WIDTH and max(figures["tables"]) <= 0.5, figures
