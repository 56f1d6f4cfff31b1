"""SPLADE encoders (Formal et al. 2021): a fill-mask Transformer plus ``SpladePooling`` built from a
``*ForMaskedLM`` checkpoint with the rescale applied, and how they encode."""

from __future__ import annotations

from pathlib import Path

from lsrbench.device import model_device as default_device  # the index stage's and the calibration's name for it
from lsrbench.errors import InputError
from lsrbench.model.families import family_of
from lsrbench.model.load_options import model_kwargs
from lsrbench.model.rescale import rescale_mlm_head
from lsrbench.model.weights_header import damaged_weights

__all__ = ["apply_rescale", "build_sparse_encoder", "released_sparse_encoder", "is_sparse_encoder", "set_encode_lengths",
           "position_limit", "encode_autocast", "default_device", "load_trained_encoder"]


def apply_rescale(mlm, head_scale: float = 1.0, k: float = 1.0, mode: str = "shared", head_scale_mode: str = "shared"):
    """What training does to a loaded head, in order: ``head_scale`` (twin or matched head), then ``W_head <-
    W_head / k``; shared by training and the probe."""
    if head_scale != 1.0 or head_scale_mode == "untie":
        rescale_mlm_head(mlm, 1.0 / head_scale, head_scale_mode)
    if k != 1.0 or mode == "untie":
        rescale_mlm_head(mlm, k, mode)
    return mlm


def build_sparse_encoder(
    path: str,
    max_seq_length: int,
    *,
    trust_remote_code: bool = False,
    revision: str | None = None,
    head_scale: float = 1.0,
    k: float = 1.0,
    mode: str = "shared",
    head_scale_mode: str = "shared",
    query_length: int | None = None,
    document_length: int | None = None,
    device: str | None = None,
):
    """A SPLADE SparseEncoder from a checkpoint, its head multiplied by ``head_scale`` and then divided by
    ``k``."""
    import transformers
    from sentence_transformers import SparseEncoder
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sparse_encoder.modules import SpladePooling

    device = device or default_device()  # chosen (a GPU job without a GPU stops) before the model loads
    transformers.logging.set_verbosity_error()
    common = {"trust_remote_code": trust_remote_code, **({"revision": revision} if revision else {})}
    transformer = Transformer(
        path,
        transformer_task="fill-mask",
        max_seq_length=max_seq_length,
        model_kwargs=model_kwargs(**common),
        config_kwargs=dict(common),
        processor_kwargs=dict(common),
        query_length=query_length,
        document_length=document_length,
    )
    apply_rescale(transformer.auto_model, head_scale, k, mode, head_scale_mode)
    # Said here, not at first access during training (a run resumed at its final checkpoint would save null).
    return SparseEncoder(modules=[transformer, SpladePooling("max")], device=device,
                         similarity_fn_name="dot")


def is_sparse_encoder(path: str, revision: str | None = None) -> bool:
    """Whether ``path`` (a folder or a hub id) is a sentence-transformers model (has ``modules.json``)
    rather than a bare ``*ForMaskedLM`` checkpoint."""
    from pathlib import Path

    if Path(path).is_dir():
        return (Path(path) / "modules.json").is_file()
    from huggingface_hub import hf_hub_download
    from huggingface_hub.constants import ENDPOINT
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    from lsrbench.downloads import FetchFailed, network_reason

    try:
        hf_hub_download(path, "modules.json", revision=revision)
    except LocalEntryNotFoundError as exc:  # a subclass of EntryNotFoundError: not "absent", unreachable
        raise FetchFailed(f"hub:{path}", None, f"'{path}' (modules.json)", f"the Hugging Face hub ({ENDPOINT})",
                          network_reason(exc) or str(exc)) from None
    except EntryNotFoundError:
        return False
    return True


def released_sparse_encoder(path: str, query_length: int, document_length: int, *, trust_remote_code: bool = False,
                            revision: str | None = None):
    """A released sparse encoder as it is (its own modules), or a SPLADE-trained MLM checkpoint built at k = 1.
    Returns ``(model, "sparse_encoder" | "mlm")``."""
    from sentence_transformers import SparseEncoder

    if is_sparse_encoder(path, revision):
        model = SparseEncoder(path, device="cpu", trust_remote_code=trust_remote_code, revision=revision,
                              model_kwargs=model_kwargs())
        return model, "sparse_encoder"
    model = build_sparse_encoder(path, document_length, trust_remote_code=trust_remote_code, revision=revision,
                                 query_length=query_length, document_length=document_length, device="cpu")
    return model, "mlm"


def load_trained_encoder(model_dir: str, device: str, **kwargs):
    """A finished run's SparseEncoder, or one line naming the damaged file."""
    from sentence_transformers import SparseEncoder

    from lsrbench.model.checkpoint import library_failure

    try:
        return SparseEncoder(str(model_dir), device=device, model_kwargs=model_kwargs(), **kwargs)
    except Exception as exc:  # noqa: BLE001 - the file's fault (one line naming it) or the library's (another)
        damaged = damaged_weights(model_dir)
        library = None if damaged else library_failure(exc, f"loading the trained model {model_dir}",
                                                       caller="sentence-transformers")
        if library is not None:
            raise library from None
        file, problem = damaged if damaged else (Path(model_dir), f"damaged ({' '.join(str(exc).split())})")
        raise InputError(file, None, f"cannot load the trained model: {problem}; delete {Path(model_dir).parent} "
                                     "to train it again (`lsrbench verify --results results` lists what else is damaged)") from None


def position_limit(transformer) -> int | None:
    """The most tokens the backbone takes (``max_position_embeddings``, less RoBERTa-style offsets
    of ``padding_idx + 1``; :meth:`lsrbench.model.families.Family.position_limit`); None without
    such a limit."""
    model = transformer.auto_model
    return family_of(model).position_limit(model)


def set_encode_lengths(model, query_length: int | None, document_length: int | None) -> dict:
    """Set the query and document truncation lengths (each capped at the position limit; None keeps the saved one);
    returns the lengths applied."""
    transformer = model[0]
    limit = position_limit(transformer)
    applied = {}
    for name, value in (("query_length", query_length), ("document_length", document_length)):
        if value is not None:
            setattr(transformer, name, min(value, limit) if limit else value)
        applied[name] = getattr(transformer, name)
    longest = max(v for v in applied.values() if v is not None) if any(applied.values()) else None
    if longest is not None and (transformer.max_seq_length or 0) < longest:
        transformer.max_seq_length = longest  # the tokenizer's model_max_length: no warnings, no cap below it
    return applied


def encode_autocast(device: str, precision: str = "fp32"):
    """The context the index stage encodes in (``fp32``, ``bf16``, or ``auto``: bf16 where the GPU supports it) and
    the resolved precision."""
    import contextlib

    import torch

    kind = torch.device(device).type
    if precision == "auto":
        precision = "bf16" if kind == "cuda" and torch.cuda.is_bf16_supported() else "fp32"
    if precision == "fp32":
        return contextlib.nullcontext(), "fp32"
    return torch.autocast(kind, dtype=torch.bfloat16), "bf16"
