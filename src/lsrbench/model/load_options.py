"""The options every model load passes to transformers."""

from __future__ import annotations

__all__ = ["MODEL_KWARGS", "model_kwargs"]

# ``use_kernels`` is a from_pretrained argument on every transformers 5.x (default False before 5.25).
MODEL_KWARGS: dict = {"use_kernels": False}


def model_kwargs(**extra) -> dict:
    """:data:`MODEL_KWARGS` with ``extra`` (trust_remote_code, revision): a new dict per call."""
    from lsrbench.model.gte import register

    register()
    return {**MODEL_KWARGS, **extra}
