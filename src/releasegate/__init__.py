"""releasegate: a pre-deployment evaluation and release gate for fine-tuned LLMs."""

__version__ = "0.1.0"
DEFAULT_CONFIG = "releasegate.yaml"
"""The config `check`, `validate` and `matrix` read when none is named."""

__all__ = ["__version__", "DEFAULT_CONFIG"]
