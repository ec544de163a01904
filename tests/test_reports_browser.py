"""The HTML report opened in a real browser (Debian's headless chromium): hostile model outputs show as text,
no script runs, the CSP blocks a script even if one got in, and a screenshot is saved for a person to check."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from test_reports import IMG, SCRIPT, make_run, parse

# payloads that leave a mark if they ever run: a changed title, an attribute on <body>
TITLE_PAYLOAD = "<script>document.title='PWNED'</script>"
ATTR_PAYLOAD = "<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">"
PAYLOADS = {0: SCRIPT, 1: IMG, 2: TITLE_PAYLOAD, 3: ATTR_PAYLOAD, 4: f"before {TITLE_PAYLOAD} after {ATTR_PAYLOAD}"}


@pytest.fixture
def chromium() -> str:
    path = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run installs it with `make chromium`")
        pytest.skip("Debian's chromium is not installed (make chromium, or apt-get install chromium)")
    return path


def browse(chromium: str, page: Path, profile: Path, *args: str) -> str:
    """Run headless chromium on a local file; returns stdout (the DOM for --dump-dom)."""
    cmd = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
        "--disable-dev-shm-usage", "--hide-scrollbars", f"--user-data-dir={profile}", *args, page.as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def title_of(dom: str) -> str:
    return dom.split("<title>", 1)[1].split("</title>", 1)[0]


def test_hostile_outputs_show_as_text_and_run_nothing(tmp_path, chromium):
    run = make_run(tmp_path, PAYLOADS)
    page = run.path / "report.html"
    dom = browse(chromium, page, tmp_path / "profile-dom", "--dump-dom")

    assert title_of(dom) == "releasegate FAIL · run-1"  # the title payload did not run
    assert "data-pwned" not in dom.split("<body", 1)[1].split(">", 1)[0]  # nor the onerror payload
    elements = parse(dom)
    names = [t for t, _ in elements.tags]
    assert "script" not in names and "img" not in names  # the browser built no element from any output
    text = "".join(elements.text)
    for payload in PAYLOADS.values():
        assert payload in text  # ...and shows every payload as the text it is

    # the top of the page as a reader first sees it, and the whole page down to the hostile outputs in the cases
    for name, height in (("report.png", 2000), ("report-full.png", 3600)):
        shot = tmp_path / name
        browse(chromium, page, tmp_path / f"profile-{name}", f"--screenshot={shot}", f"--window-size=1280,{height}")
        head = shot.read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24]) == (1280, height)
        with Image.open(shot) as image:  # a rendered page, not a blank one
            assert len(image.convert("RGB").getcolors(maxcolors=1 << 20) or []) > 50
        print(f"screenshot: {shot}")


def test_the_browser_check_does_detect_a_script(tmp_path, chromium):
    """The control: the same payloads, unescaped on a page without our CSP, do leave their marks."""
    page = tmp_path / "control.html"
    page.write_text(f"<!doctype html><html><head><title>orig</title></head><body>{TITLE_PAYLOAD}{ATTR_PAYLOAD}</body></html>")
    dom = browse(chromium, page, tmp_path / "profile", "--dump-dom")
    assert title_of(dom) == "PWNED" and 'data-pwned="1"' in dom


def test_the_csp_blocks_a_script_that_got_into_the_page(tmp_path, chromium):
    """Were escaping ever broken, the Content-Security-Policy would still stop inline scripts and handlers."""
    run = make_run(tmp_path)
    html = (run.path / "report.html").read_text()
    page = tmp_path / "injected.html"
    page.write_text(html.replace("<body>", f"<body>{TITLE_PAYLOAD}{ATTR_PAYLOAD}", 1))
    dom = browse(chromium, page, tmp_path / "profile", "--dump-dom")
    assert "<script>" in dom  # the script element is there...
    assert title_of(dom) == "releasegate FAIL · run-1" and 'data-pwned="1"' not in dom  # ...and did not run
