"""The HTML report opened in a real browser (Debian's headless chromium): hostile model outputs show as text,
no script runs, the CSP blocks a script even if one got in, Korean text is drawn with real glyphs (`make chromium`
installs a CJK font, so missing-glyph boxes would show), and a screenshot is saved for a person to check."""

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


# -- Korean (and other CJK) text drawn with real glyphs, not as missing-glyph boxes ("tofu") ------------------------

KOREAN = "환불 요청: 결제가 두 번 되었습니다"
SYLLABLES = ["환", "불", "결", "제"]
MISSING = ["\u0378", "\u0379"]  # unassigned code points: no font has them, so they show the missing-glyph box
CELL = 90
NO_KOREAN_FONT = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <selectfont><rejectfont><pattern><patelt name="lang"><string>ko</string></patelt></pattern></rejectfont></selectfont>
</fontconfig>
"""


def drawn_glyphs(chromium: str, tmp_path: Path, env: dict | None = None) -> dict[tuple[str, str], bytes]:
    """Each syllable of a case's Korean output, and the missing-glyph box, as the report page draws them: in the
    page's text font and in its code font (the case table's), each alone in a cell of a probe laid over a real
    report; the pixels of every cell, keyed by (font, character)."""
    run = make_run(tmp_path, {0: KOREAN})
    page = (run.path / "report.html").read_text()
    assert KOREAN in page
    cells = []
    for row, tag in enumerate(("div", "code")):
        for col, char in enumerate(SYLLABLES + MISSING):
            style = (f"position:absolute;left:{col * CELL}px;top:{row * CELL}px;width:{CELL}px;height:{CELL}px;"
                     f"font-size:64px;line-height:{CELL}px;text-align:center;background:#fff;color:#000")
            cells.append(f'<{tag} style="{style}">{char}</{tag}>')
    probe = f'<div style="position:fixed;inset:0;z-index:99;background:#fff">{"".join(cells)}</div>'
    (tmp_path / "probe.html").write_text(page.replace("<body>", f"<body>{probe}", 1))
    shot = tmp_path / "probe.png"
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
           "--disable-dev-shm-usage", "--hide-scrollbars", "--force-device-scale-factor=1",
           f"--user-data-dir={tmp_path / 'profile-glyphs'}", f"--screenshot={shot}", "--window-size=1280,400",
           (tmp_path / "probe.html").as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with Image.open(shot) as image:
        gray = image.convert("L")
        return {(tag, char): gray.crop((col * CELL + 4, row * CELL + 4, (col + 1) * CELL - 4, (row + 1) * CELL - 4)).tobytes()
                for row, tag in enumerate(("div", "code")) for col, char in enumerate(SYLLABLES + MISSING)}


def tofu(glyphs: dict[tuple[str, str], bytes]) -> list[str]:
    """The syllables drawn as the missing-glyph box, or drawn not at all, in either font."""
    found = []
    for tag in ("div", "code"):
        box = glyphs[(tag, MISSING[0])]
        assert glyphs[(tag, MISSING[1])] == box and min(box) < 128  # the box itself: drawn, the same for both
        for char in SYLLABLES:
            pixels = glyphs[(tag, char)]
            if pixels == box or min(pixels) >= 128 or sum(p != q for p, q in zip(pixels, box)) < 20:
                found.append(f"{char} ({tag})")
        drawn = [glyphs[(tag, c)] for c in SYLLABLES]
        if len(set(drawn)) < len(drawn):  # different syllables drawn alike: boxes of some other kind
            found.append(f"identical syllables ({tag})")
    return found


def test_korean_in_a_report_is_drawn_with_real_glyphs(tmp_path, chromium):
    missing = tofu(drawn_glyphs(chromium, tmp_path))
    assert not missing, (f"Korean drawn as missing-glyph boxes: {missing}; no installed font covers it "
                         "(make chromium installs fonts-noto-cjk)")


def test_the_glyph_check_sees_tofu_when_no_font_covers_korean(tmp_path, chromium):
    """The control: the same page with every Korean font refused (fontconfig) shows boxes, and the check says so."""
    config = tmp_path / "fonts.conf"
    config.write_text(NO_KOREAN_FONT)
    glyphs = drawn_glyphs(chromium, tmp_path, env={**os.environ, "FONTCONFIG_FILE": str(config)})
    assert sorted(tofu(glyphs)) == sorted([f"{c} ({t})" for t in ("div", "code") for c in SYLLABLES]
                                          + ["identical syllables (div)", "identical syllables (code)"])
