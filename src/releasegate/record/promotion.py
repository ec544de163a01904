"""What `promote` did (`pipeline.promote.promote_run`), as the command shows it: the webhook's answer and the
MLflow registry's version, each present only when that hand-off was asked for."""

from __future__ import annotations

from pydantic import ConfigDict

from ..model_base import Model

__all__ = ["Promotion", "WebhookAnswer", "RegistryVersion", "ReleaseSummary"]


class _Part(Model):
    model_config = ConfigDict(extra="allow")


class WebhookAnswer(_Part):
    url: str
    status: object
    attempts: int
    reply_not_read: object = None
    """What the webhook's reply held that was not read (too large, not text), when it was not."""


class RegistryVersion(_Part):
    model: str
    version: str
    alias: str
    registry: str


class Promotion(_Part):
    webhook: WebhookAnswer | None = None
    mlflow: RegistryVersion | None = None


class ReleaseSummary(_Part):
    """What a promotion says of the run (`pipeline.promote.release_summary`), as the registry's tags read it."""

    verdict: str
    reason: str | None = None
    run_id: str | None = None
    rubric_sha256: str | None = None
    effective_rubric_sha256: str | None = None
    target_fingerprint: str | None = None
