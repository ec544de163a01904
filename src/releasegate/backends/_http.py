"""The HTTP library the `openai` client is built on (httpx, published as httpx2 in newer releases)."""

try:
    import httpx2 as httpx
except ImportError:  # pragma: no cover - older openai releases
    import httpx  # type: ignore[no-redef]

__all__ = ["httpx"]
