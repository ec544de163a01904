"""What `python -m releasegate.export.llamacpp` and `... .vllm` do once their server is up."""

from __future__ import annotations

import time

__all__ = ["serve_until_interrupted"]


def serve_until_interrupted(server, line: str) -> None:
    """Say where the server listens, then keep it up until Ctrl-C, which stops it."""
    print(line, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
