"""A real llama.cpp server for tests: the demo model exported to GGUF and served in-process by xllamacpp
(`releasegate.export.llamacpp.start_server`, whose docstring lists the llama.cpp settings and why), plus plain
urllib helpers that do not go through releasegate's own clients.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

from releasegate.export.llamacpp import LlamaCppServer, start_server, wait_healthy

__all__ = ["LlamaCppServer", "start_server", "wait_healthy", "export_demo", "demo_available", "get", "post_json",
           "stream_json", "load_cases", "DEMO", "SUITES"]

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "models" / "demo"
SUITES = [ROOT / "suites" / "demo" / "tickets.jsonl", ROOT / "suites" / "demo" / "tickets_shifted.jsonl"]


def demo_available() -> bool:
    return (DEMO / "base" / "config.json").is_file() and (DEMO / "adapters" / "good").is_dir()


def export_demo(out_dir: Path, adapters: tuple[str, ...] = ("good",), outtype: str = "f32") -> tuple[Path, list[Path]]:
    """The demo base model and the named adapters as GGUF files in out_dir.

    f32 (not f16) so that llama.cpp's matmuls run in f32 like the HF float32 reference.
    """
    from releasegate.export.gguf import export_lora, export_model

    model = export_model(DEMO / "base", out_dir / "demo-base.gguf", outtype=outtype)
    loras = [
        export_lora(DEMO / "adapters" / name, out_dir / f"demo-{name}.gguf", base=DEMO / "base", outtype="f32")
        for name in adapters
    ]
    return model, loras


# --- plain HTTP (urllib), independent of releasegate's own clients ----------------------------------------


def get(url: str, timeout: float = 30) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def post_json(url: str, body: dict, timeout: float = 120) -> dict:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode("utf-8"), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=timeout) as r:
        return json.loads(r.read().decode("utf-8"))


def stream_json(url: str, body: dict, timeout: float = 120) -> list[dict]:
    """POST with "stream": true; the parsed `data:` events of the SSE stream, up to [DONE]."""
    request = urllib.request.Request(
        url, data=json.dumps({**body, "stream": True}).encode("utf-8"),
        headers={"Content-Type": "application/json", "Accept": "text/event-stream"}, method="POST",
    )
    events = []
    with urllib.request.urlopen(request, timeout=timeout) as r:
        for raw in r:
            line = raw.decode("utf-8").strip()
            if not line.startswith("data:"):
                continue
            data = line[len("data:"):].strip()
            if data == "[DONE]":
                break
            events.append(json.loads(data))
    return events


def load_cases(limit_per_suite: int | None = None) -> list[dict]:
    cases = []
    for path in SUITES:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        cases += [r for r in rows if r.get("messages")][:limit_per_suite]
    return cases
