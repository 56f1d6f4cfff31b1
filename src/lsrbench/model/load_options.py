"""The options every model load in lsrbench passes to transformers, defined once.

transformers 5.25 turned ``use_kernels`` on by default in ``from_pretrained``: it "kernelizes" the
model with kernels fetched from the Hugging Face hub (network at load time, downloaded code, numerics
that depend on the kernels release) and refuses the meta device the checkpoint check reads headers
on ("Unsupported device type 'meta'"). lsrbench loads the model's own PyTorch layers, as transformers
5.0-5.24 did by default: the same numbers offline, on every release the ranges allow.

Every load also knows GTE-MLM's hub checkpoints (``model_type: "new"``) without their remote code
(:mod:`lsrbench.model.gte`): :func:`model_kwargs` registers them with transformers' Auto classes."""

from __future__ import annotations

__all__ = ["MODEL_KWARGS", "model_kwargs"]

# ``use_kernels`` is a from_pretrained argument on every transformers 5.x (default False before 5.25).
MODEL_KWARGS: dict = {"use_kernels": False}


def model_kwargs(**extra) -> dict:
    """:data:`MODEL_KWARGS` with ``extra`` (trust_remote_code, revision): a new dict per call."""
    from lsrbench.model.gte import register

    register()
    return {**MODEL_KWARGS, **extra}
