"""Test helpers that ship with releasegate: a stub OpenAI-compatible streaming server with known latency."""

from .stub_server import StubBehaviour, StubServer

__all__ = ["StubBehaviour", "StubServer"]
