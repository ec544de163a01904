"""releasegate: a pre-deployment evaluation and release gate for fine-tuned LLMs."""

__version__ = "0.1.0"

__all__ = ["__version__"]
