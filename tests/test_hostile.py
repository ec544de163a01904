"""Hostile model outputs are data, never structure: every payload class through `releasegate check` on the replay
backend and on a streaming endpoint, then every artifact read back by a real consumer.

Payloads: lone surrogates, NUL, ESC/CSI/OSC sequences, C1 controls, bidi overrides and isolates, a 200,000-character
output, spreadsheet formulas, HTML and script tags, Markdown links, images, headings and tables, bare URLs, e-mail
addresses, @mentions and issue references. A run must finish (no traceback), record every case, and write files that
parse: records.jsonl, run.json, report.json, report.junit.xml, report.html, report.md (rendered by markdown-it with
linkify: no link, image or raw HTML from an output), report.csv, and a review CSV that imports back unchanged.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
import threading
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import run_subprocess, write_jsonl
from releasegate.record.records import REPLACEMENT, CaseRecord, RunDir, valid_text
from releasegate.record.review_outcome import output_hash
from releasegate.report.markdown import md_text
from releasegate.review import unneutralise
from releasegate.spreadsheet import neutralise
from releasegate.text import inert, json_inert, reveal

LONG = "".join(f"word{i} " for i in range(40_000))[:200_000]  # 200,000 characters, past csv's 131,072 field limit
PAYLOADS = {
    "lone-high": "lone\ud800surrogate",
    "lone-low": "bad \udc80 out",
    "nul": "nul\x00byte and \x00\x00 more",
    "csi": "\x1b[31mRED\x1b[0m \x1b[2J\x1b[H cleared \x1b[6n",
    "osc": "\x1b]8;;http://evil.example/\x07click me\x1b]8;;\x07 \x1b]0;owned title\x1b\\ \x1b]52;c;cGFzdGU=\x07",
    "c1": "c1 csi \x9b31m red \x9d0;title\x9c \x85 nel \x90dcs\x9c",
    "bidi": "approve\u202e txt.exe \u2066isolate\u2069 \u202a\u202b\u202c\u202d \u200f\u061c",
    "controls": "bell\x07 back\x08space del\x7f vt\x0bff\x0c fs\x1c us\x1f",
    "long": LONG,
    "formula-eq": '=HYPERLINK("http://evil.example","click")',
    "formula-plus": "+cmd|' /C calc'!A0",
    "formula-minus": "-2+3+cmd|' /C calc'!A0",
    "formula-at": "@SUM(1+1)*cmd|' /C calc'!A0",
    "formula-tab": "\t=1+1",
    "formula-cr": "\r=1+1",
    "formula-quote": "'=1+1",
    "html": '<script>alert(1)</script><img src=x onerror=alert(1)><iframe src="//evil.example"></iframe>'
            "<a href=\"javascript:alert(1)\">x</a><svg onload=alert(1)><!-- c --><style>*{}</style>",
    "markdown": "[click](http://evil.example) ![img](http://evil.example/i.png) [ref][1]\n\n[1]: http://evil.example\n"
                "# Heading\n## Two\n| a | b |\n|---|---|\n> quote\n```\ncode\n```\n* item\n1. one\n<details>open",
    "urls": "visit http://evil.example/x or www.evil.example or HTTPS://EVIL.EXAMPLE/?q=1#f, ftp://files.evil.example, "
            "//cdn.evil.example, evil.example, sub.evil.co.uk/path, http://127.0.0.1:8080/, http://localhost/",
    "emails": "mail alice@evil.example, mailto:bob@evil.example, xmpp:carol@evil.example, <dave@evil.example>",
    "mentions": "@octocat @org/team #1 GH-2 owner/repo#3",
    "lines": "a | b\r\nc\u2028d\u2029e\n\nf\\|g`h``i```j",
    "entities": "&lt;script&gt; &#60;b&#62; &amp;",
    "good": "ok",
}
SURROGATE_CASES = {"lone-high", "lone-low"}
CASE_IDS = [f"h{i:02d}" for i in range(len(PAYLOADS))]
OUTPUT = dict(zip(CASE_IDS, PAYLOADS.values()))
KIND = dict(zip(CASE_IDS, PAYLOADS))
CASE_OF = dict(zip(PAYLOADS, CASE_IDS))
RUBRIC = """\
name: hostile outputs
criteria:
  - {metric: accuracy, op: ">=", threshold: 0.5}
  - {metric: error_rate, op: "<=", threshold: 0.0}
forbidden:
  - {category: links, phrases: ["evil.example"]}
review:
  required_domains: [support]
  min_reviewed: 1000
  min_approval: 0.5
"""
TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def expected_output(kind: str) -> str:
    """What the record must hold: the output exactly, lone surrogates as U+FFFD."""
    return valid_text(PAYLOADS[kind])


def write_project(root: Path, target: str) -> Path:
    write_jsonl(root / "suite.jsonl", [
        {"id": cid, "messages": [{"role": "user", "content": f"case {cid}"}], "expected": "ok",
         "tags": {"domain": "support"}}
        for cid in CASE_IDS
    ])
    (root / "rubric.yaml").write_text(RUBRIC)
    (root / "releasegate.yaml").write_text(
        f"target:\n{target}generation: {{max_new_tokens: 64}}\n"
        "suites: [{path: suite.jsonl, answer: {type: regex, pattern: '^ok$'}}]\nrubric: rubric.yaml\n"
    )
    return root / "releasegate.yaml"


# ---------------------------------------------------------------- a streaming endpoint that says what it is told


class TextServer:
    """A minimal OpenAI-compatible streaming server on 127.0.0.1: the chat request whose user message is 'case <id>'
    gets `outputs[id]`, streamed in pieces of `piece` characters (so ESC sequences and surrogate pairs are split
    across events), with usage and [DONE]. HTTP/1.1 keep-alive, chunked responses."""

    def __init__(self, outputs: dict[str, str], piece: int = 7) -> None:
        self.outputs, self.piece = outputs, piece
        self.port = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> TextServer:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    async def _main(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                method = line.split(b" ", 1)[0]
                length = 0
                while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = header.decode("latin-1").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                body = json.loads(await reader.readexactly(length)) if length else {}
                if method == b"GET":
                    data = json.dumps({"object": "list", "data": [{"id": "stub", "object": "model"}]}).encode()
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                                 + str(len(data)).encode() + b"\r\n\r\n" + data)
                else:
                    case_id = body["messages"][-1]["content"].split()[-1]
                    self._stream(writer, self.outputs[case_id])
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def _stream(self, writer, text: str) -> None:
        def event(payload) -> None:
            data = b"data: " + (payload if isinstance(payload, bytes) else json.dumps(payload).encode()) + b"\n\n"
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        size = self.piece if len(text) < 1000 else 4096
        pieces = [text[i:i + size] for i in range(0, len(text), size)] or [""]
        for piece in pieces:  # json.dumps writes a lone surrogate as a \\udXXX escape, as a server would
            event({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
        event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        event({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": len(pieces)}})
        event(b"[DONE]")
        writer.write(b"0\r\n\r\n")


# ---------------------------------------------------------------- every artifact, read back


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def read_csv(text: str, **kw) -> list[dict]:
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, 1 << 26))
    try:
        return list(csv.DictReader(io.StringIO(text, newline=""), **kw))
    finally:
        csv.field_size_limit(limit)


def assert_terminal_safe(text: str, what: str) -> None:
    found = TERMINAL_UNSAFE.search(text)
    if found is not None:
        at = found.start()
        pytest.fail(f"{what}: {found.group()!r} at {at}: {text[max(0, at - 40):at + 40]!r}")


def assert_markdown_inert(markdown: str) -> None:
    from markdown_it import MarkdownIt

    renderer = MarkdownIt("gfm-like")
    assert renderer.options.get("linkify"), "linkify-it-py is needed to test autolinks"
    html = renderer.render(markdown)
    links = re.findall(r"<a [^>]*>", html)  # the endpoint's URL, from the config, may be one: nothing from an output
    assert all(re.fullmatch(r'<a href="http://127\.0\.0\.1:\d+/v1">', a) for a in links) and "<img" not in html, links
    for tag in ("script", "iframe", "svg", "style", "blockquote", "pre", "ol", "hr", "em>", "del>"):
        assert f"<{tag}" not in html, tag
    assert len(re.findall("<h[1-6]>", html)) == len(re.findall("(?m)^#{1,6} ", markdown))  # the report's own headings
    assert html.count("<details>") == markdown.count("<details>")  # the report's own, none from an output
    assert "@octocat" not in markdown and "evil.example" not in markdown  # no mention; every host name broken
    assert_terminal_safe(markdown, "report.md")
    for block in re.findall(r"(?m)(?:^\|.*\n?)+", markdown):  # every table: each row has its header's cells
        widths = {len(re.findall(r"(?<!\\)\|", line)) for line in block.splitlines()}
        assert len(widths) == 1, block[:500]


def assert_artifacts(run_dir: Path, cli) -> None:
    run = RunDir(run_dir)
    lines = (run_dir / "records.jsonl").read_text("utf-8").splitlines()  # str.splitlines: U+2028 must be escaped
    rows = [json.loads(line) for line in lines]  # every line is JSON
    assert sorted(r["case_id"] for r in rows) == CASE_IDS  # every case recorded, once
    records = {r.case_id: r for r in run.read_records()}
    for cid, record in records.items():
        kind = KIND[cid]
        assert record.error is None, (kind, record.error_message)
        assert record.output == expected_output(kind), kind  # the text itself: NUL, ESC and all, as data
        assert record.output_repaired is (kind in SURROGATE_CASES), kind
        assert record.scores["answer"]["passed"] is (kind == "good"), kind  # scored like any output
        assert record.scores["forbidden"]["hit"] is ("evil.example" in record.output.lower()), kind
    assert REPLACEMENT in records[CASE_OF["lone-high"]].output and len(records[CASE_OF["long"]].output) == 200_000
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    report = json.loads((run_dir / "report.json").read_text("utf-8"))
    assert report["counts"]["cases"] == len(CASE_IDS)
    assert report["counts"]["phases"]["quality"]["repaired"] == len(SURROGATE_CASES)  # said, not hidden

    ET.parse(run_dir / "report.junit.xml")  # well-formed XML 1.0
    junit = (run_dir / "report.junit.xml").read_text("utf-8")
    assert_terminal_safe(junit, "report.junit.xml")
    ET.fromstring(cli_out(cli, "report", run_dir, "-f", "junit", "--junit-cases"))

    html = (run_dir / "report.html").read_text("utf-8")
    page = Page()
    page.feed(html)
    page.close()
    names = [t for t, _ in page.tags]
    assert "script" not in names and "img" not in names and "iframe" not in names and "style" in names
    for tag, attrs in page.tags:
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
        for key in ("href", "src"):
            assert not attrs.get(key) or attrs[key].startswith("#"), (tag, attrs)
    assert_terminal_safe(html, "report.html")

    assert_markdown_inert((run_dir / "report.md").read_text("utf-8"))

    for fmt in ("csv", "md", "html", "junit", "json"):
        out = cli_out(cli, "report", run_dir, "-f", fmt)
        assert_terminal_safe(out, f"report --format {fmt}")
    table = read_csv(cli_out(cli, "report", run_dir, "-f", "csv"))
    by_id = {row["case_id"]: row for row in table}
    assert sorted(by_id) == CASE_IDS
    for cid, row in by_id.items():
        cell, shown = row["output"], inert(expected_output(KIND[cid]))
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell[:20]
        assert cell == neutralise(shown)[:32_000], KIND[cid]  # the text, with stand-ins; formulas behind apostrophes
    assert json.loads(cli_out(cli, "report", run_dir, "-f", "json")) == report

    assert_review_round_trip(run_dir, cli, records)


def assert_review_round_trip(run_dir: Path, cli, records: dict[str, CaseRecord]) -> None:
    code, _, err = cli("review", "export", run_dir)
    assert code == 0, err
    raw = (run_dir / "review_queue.csv").read_bytes().decode("utf-8-sig")
    assert_terminal_safe(raw, "review_queue.csv")
    rows = read_csv(raw)
    assert sorted(r["case_id"] for r in rows) == CASE_IDS  # every case sampled (required domain, min_reviewed)
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "-", "@", "\t", "\r")), value[:20]
        assert reveal(unneutralise(row["output"])) == records[row["case_id"]].output  # full length, exact
        assert row["output_hash"] == output_hash(records[row["case_id"]].output)
    code, out, err = cli("review", "import", run_dir, run_dir / "review_queue.csv", "--json")
    assert code == 0, err  # the file as exported imports: nothing labelled, nothing refused
    assert json.loads(out)["rows"] == len(CASE_IDS)

    filled = run_dir / "filled.csv"
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writeheader()
    for row in rows:
        label = "approve" if KIND[row["case_id"]] == "good" else "reject"
        writer.writerow({**row, "label": label, "reviewer": "alice"})
    filled.write_bytes(buf.getvalue().encode("utf-8-sig"))
    code, out, err = cli("review", "import", run_dir, filled, "--json")
    assert code == 0, err
    assert json.loads(out)["imported"] == len(CASE_IDS)
    code, _, err = cli("gate", run_dir)  # the labels count: review done, the gate fails on accuracy alone
    assert code == 1 and "Traceback" not in err, err


def cli_out(cli, *args) -> str:
    code, out, err = cli(*args)
    assert code == 0, err
    return out


def check(cli, config: Path, run_id: str = "hostile") -> Path:
    code, out, err = cli("check", "-c", config, "--run-id", run_id, "--no-progress", "--json")
    assert code in (1, 3), err  # a verdict (the outputs are wrong), not an input or target error
    assert "Traceback" not in err
    assert_terminal_safe(out, "check --json")
    assert json.loads(out)["verdict"] in ("FAIL", "NEEDS_REVIEW")
    return config.parent / "reports" / run_id


# ---------------------------------------------------------------- the two ways in


def test_replay_backend(tmp_path, cli):
    # JSON escapes for the lone surrogates (as json.dumps writes them), and one output as bytes that are not UTF-8
    lines = [json.dumps({"id": cid, "output": text}) for cid, text in OUTPUT.items()]
    raw = "\n".join(lines).encode() + b'\n{"id": "h99", "output": "raw \xff\xfe bytes"}\n'
    (tmp_path / "responses.jsonl").write_bytes(raw)
    config = write_project(tmp_path, "  backend: replay\n  responses: responses.jsonl\n")
    assert_artifacts(check(cli, config), cli)


def test_replay_file_written_with_raw_unicode_separators(tmp_path, cli):
    """A replay file written with ensure_ascii=False holds U+2028, U+0085... raw inside JSON strings: still one line."""
    outputs = {cid: text for cid, text in OUTPUT.items() if KIND[cid] not in SURROGATE_CASES}
    outputs |= {cid: valid_text(OUTPUT[cid]) for cid in OUTPUT if KIND[cid] in SURROGATE_CASES}
    (tmp_path / "responses.jsonl").write_text("".join(json.dumps({"id": c, "output": t}, ensure_ascii=False) + "\n"
                                                      for c, t in outputs.items()), encoding="utf-8")
    config = write_project(tmp_path, "  backend: replay\n  responses: responses.jsonl\n")
    run = check(cli, config)
    records = {r.case_id: r for r in RunDir(run).read_records()}
    assert all(records[c].output == valid_text(OUTPUT[c]) for c in CASE_IDS)


def test_replay_bytes_that_are_not_utf8_are_recorded_and_flagged(tmp_path, cli):
    (tmp_path / "responses.jsonl").write_bytes(
        b"".join(json.dumps({"id": cid, "output": "ok"}).encode() + b"\n" for cid in CASE_IDS[1:])
        + b'{"id": "h00", "output": "raw \xff\xfe bytes \xed\xa0\x80"}\n'
    )
    config = write_project(tmp_path, "  backend: replay\n  responses: responses.jsonl\n")
    code, _, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
    assert code in (1, 3), err
    record = next(r for r in RunDir(tmp_path / "reports" / "r").read_records() if r.case_id == "h00")
    assert record.output == "raw \ufffd\ufffd bytes \ufffd\ufffd\ufffd" and record.output_repaired


@pytest.mark.parametrize("client", ["lean", "openai"])
def test_streaming_endpoint(tmp_path, cli, client):
    with TextServer(OUTPUT) as server:
        config = write_project(tmp_path, f"  backend: openai\n  base_url: {server.base_url}\n  model: stub\n"
                                         f"  client: {client}\n  concurrency: 4\n  retries: 0\n  timeout_s: 30\n")
        run = check(cli, config)
    assert_artifacts(run, cli)


def test_a_surrogate_pair_split_across_events_is_joined_not_flagged(tmp_path, cli):
    # two code points, the halves of U+1F600, in two events: "emoji \ud83d" | "\ude00 split"
    outputs = {cid: "ok" for cid in CASE_IDS} | {"h00": "emoji \ud83d\ude00 split"}
    with TextServer(outputs, piece=7) as server:
        config = write_project(tmp_path, f"  backend: openai\n  base_url: {server.base_url}\n  model: stub\n"
                                         "  client: lean\n  concurrency: 2\n  retries: 0\n  timeout_s: 30\n")
        code, _, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
    assert code in (0, 1, 3), err
    record = next(r for r in RunDir(tmp_path / "reports" / "r").read_records() if r.case_id == "h00")
    assert record.output == "emoji \U0001F600 split" and not record.output_repaired


def test_report_csv_on_a_real_stdout_has_no_escape_sequences(tmp_path, cli):
    write_jsonl(tmp_path / "responses.jsonl", [{"id": c, "output": t} for c, t in OUTPUT.items()])
    run = check(cli, write_project(tmp_path, "  backend: replay\n  responses: responses.jsonl\n"))
    proc = run_subprocess("report", run, "--format", "csv")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert_terminal_safe(proc.stdout, "report --format csv (subprocess)")
    assert "\u241b[31m" in proc.stdout  # ESC is shown as the control picture, the rest of the text kept


# ---------------------------------------------------------------- the run id option


@pytest.mark.parametrize("run_id", ["../../x", "/tmp/abs", "a/b/c", "x" * 300, "..", ".", "a\nb", "a b", ""])
def test_run_id_option_follows_the_config_rule(tmp_path, cli, run_id):
    (tmp_path / "responses.jsonl").write_text(json.dumps({"id": "h00", "output": "ok"}) + "\n")
    config = write_project(tmp_path, "  backend: replay\n  responses: responses.jsonl\n")
    code, _, err = cli("check", "-c", config, "--run-id", run_id, "--no-progress")
    assert code == 2 and "--run-id" in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["releasegate.yaml", "responses.jsonl", "rubric.yaml",
                                                          "suite.jsonl"]  # nothing created, here or above
    assert not (tmp_path.parent / "x").exists()


# ---------------------------------------------------------------- the helpers themselves


@pytest.mark.parametrize("text", list(PAYLOADS.values()) + ["␛ and \x1b", "⟨U+202E⟩ and \u202e", ""])
def test_inert_has_nothing_a_terminal_obeys(text):
    shown = inert(text)
    assert_terminal_safe(shown, repr(text[:30]))
    assert not re.search("[\ud800-\udfff]", shown)
    if not re.search("[\u2400-\u2421\u27e8]", text):
        assert reveal(shown) == text  # exactly undone when the text had no stand-in glyphs of its own
    assert json.loads(json_inert(json.dumps({"t": valid_text(text)}, ensure_ascii=False))) == {"t": valid_text(text)}


@pytest.mark.parametrize("text", list(PAYLOADS.values()))
def test_md_text_is_one_inert_table_cell(text):
    assert_markdown_inert("| a | b |\n|---|---|\n| x | " + md_text(text[:2000]) + " |\n")


def test_a_record_built_with_a_lone_surrogate_is_valid_and_flagged(tmp_path):
    record = CaseRecord(case_id="c", suite="s", input={"prompt": "p\udc80"}, output="a\ud800b\ud83d\ude00",
                        error_message="e\udfff")
    assert record.output == "a\ufffdb\U0001F600" and record.output_repaired and record.error_message == "e\ufffd"
    run = RunDir(tmp_path / "r")
    run.create()
    run.append([record])  # the input's surrogate (from a suite) does not lose the record either
    (back,) = run.read_records()
    assert back.output == record.output and back.output_repaired and back.input == {"prompt": "p\ufffd"}
