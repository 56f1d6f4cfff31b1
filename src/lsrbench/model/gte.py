"""GTE-MLM without remote code: new-impl's ``config.json`` read for transformers' own ``gte`` model, so nothing
from the hub runs. Written here because new-impl's code does not run on transformers 5 (equivalence:
``benchmark/gte_equivalence.py``)."""

from __future__ import annotations

from transformers import AutoConfig, AutoModelForMaskedLM, GteConfig, GteForMaskedLM

__all__ = ["GTE_HUB_MODEL_TYPE", "NEW_IMPL_CODE_REVISION", "GteHubConfig", "GteHubForMaskedLM", "gte_config_dict",
           "register"]

GTE_HUB_MODEL_TYPE = "new"
# new-impl's commit whose code the equivalence was shown against (benchmark/gte_equivalence.py).
NEW_IMPL_CODE_REVISION = "40ced75c3017eb27626c9d4ea981bde21a2662f4"

# new-impl config keys gte does not take: read into rope_parameters, refused unless gte computes them, or kernel-only.
_NEW_IMPL_KEYS = ("pack_qkv", "unpad_inputs", "use_memory_efficient_attention", "logn_attention_clip1", "auto_map",
                "rope_theta", "rope_scaling", "position_embedding_type", "layer_norm_type", "logn_attention_scale")
_registered = False


def gte_config_dict(config: dict) -> dict:
    """transformers' ``gte`` configuration for a new-impl ``config.json``; ValueError (one line) for a setting it
    cannot compute."""
    refused = {"position_embedding_type": (config.get("position_embedding_type", "rope"), "rope"),
               "layer_norm_type": (config.get("layer_norm_type", "layer_norm"), "layer_norm"),
               "logn_attention_scale": (bool(config.get("logn_attention_scale", False)), False),
               "hidden_act": (config.get("hidden_act", "gelu"), "gelu")}
    for key, (value, supported) in refused.items():
        if value != supported:
            raise ValueError(f"GTE (new-impl) {key}={value!r} is not supported: lsrbench loads only {key}={supported!r}")
    out = {k: v for k, v in config.items() if k not in _NEW_IMPL_KEYS}
    if "rope_parameters" not in config:  # a config lsrbench saved already has them
        heads = int(config.get("num_attention_heads", 12))
        out["rope_parameters"] = rope_parameters(float(config.get("rope_theta", 10000.0)), config.get("rope_scaling"),
                                                 int(config.get("hidden_size", 768)) // heads)
    out["architectures"] = ["GteHubForMaskedLM"]
    out.setdefault("type_vocab_size", 1)  # new-impl's default (transformers' gte has the same)
    return out


def rope_parameters(theta: float, scaling: dict | None, head_dim: int) -> dict:
    """new-impl's rotary frequencies as ``rope_parameters``: its fixed NTK scaling is transformers' ``linear`` type
    with base ``theta f`` and factor ``f``."""
    if not scaling:
        return {"rope_type": "default", "rope_theta": theta}
    kind, factor = scaling.get("type"), float(scaling.get("factor", 1.0))
    if kind != "ntk" or scaling.get("mixed_b") is not None:
        raise ValueError(f"GTE (new-impl) rope_scaling={scaling!r} is not supported: lsrbench loads fixed NTK scaling only")
    if factor <= 1.0:  # new-impl rebuilds the frequencies only for a cache longer than the context
        return {"rope_type": "default", "rope_theta": theta}
    return {"rope_type": "linear", "rope_theta": theta * factor, "factor": factor ** (2.0 / head_dim)}


class GteHubConfig(GteConfig):
    """transformers' ``GteConfig`` read from a new-impl ``config.json`` (``model_type: "new"``)."""

    model_type = GTE_HUB_MODEL_TYPE

    @classmethod
    def from_dict(cls, config_dict, **kwargs):
        return super().from_dict(gte_config_dict(dict(config_dict)), **kwargs)


class GteHubForMaskedLM(GteForMaskedLM):
    """transformers' ``GteForMaskedLM`` for a new-impl checkpoint (``NewForMaskedLM`` on the hub)."""

    config_class = GteHubConfig


def register() -> None:
    """Teach transformers' Auto classes ``model_type: "new"`` (idempotent)."""
    global _registered
    if _registered:
        return
    from transformers.conversion_mapping import get_checkpoint_conversion_mapping, register_checkpoint_conversion_mapping
    from transformers.core_model_loading import WeightRenaming

    # pack_qkv: false stores separate attention.{q,k,v}_proj, which the gte mapping does not rename.
    unpacked = WeightRenaming(r"attention\.([qkv])_proj", r"self_attn.\1_proj")
    register_checkpoint_conversion_mapping(GteHubForMaskedLM.__name__,
                                           [*get_checkpoint_conversion_mapping("gte"), unpacked], overwrite=True)
    AutoConfig.register(GTE_HUB_MODEL_TYPE, GteHubConfig, exist_ok=True)
    AutoModelForMaskedLM.register(GteHubConfig, GteHubForMaskedLM, exist_ok=True)
    _registered = True
