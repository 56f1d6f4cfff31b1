"""new-impl's config.json read as transformers' gte (lsrbench.model.gte): the rotary settings
translated exactly, what gte cannot compute refused in one line, before any weight is read."""

from __future__ import annotations

import json
import math

import pytest

torch = pytest.importorskip("torch")

from lsrbench.errors import InputError  # noqa: E402
from lsrbench.model.checkpoint import load_mlm  # noqa: E402
from lsrbench.model.gte import gte_config_dict, rope_parameters  # noqa: E402


def test_fixed_ntk_scaling_is_linear_rope_with_a_larger_base():
    """new-impl: inv_freq = 1 / (theta f)^(2i/d) / f^(2/d) for f > 1; transformers' linear type
    divides the default frequencies of its base by its factor."""
    assert rope_parameters(160000.0, None, 64) == {"rope_type": "default", "rope_theta": 160000.0}
    ntk = rope_parameters(160000.0, {"type": "ntk", "factor": 2.0}, 64)
    assert ntk == {"rope_type": "linear", "rope_theta": 320000.0, "factor": 2.0 ** (2 / 64)}
    d, f, theta = 64, 2.0, 160000.0
    new_impl = [1.0 / (theta * f) ** (2 * i / d) / f ** (2 / d) for i in range(d // 2)]
    linear = [1.0 / ntk["rope_theta"] ** (2 * i / d) / ntk["factor"] for i in range(d // 2)]
    assert all(math.isclose(a, b, rel_tol=1e-12) for a, b in zip(new_impl, linear))
    assert rope_parameters(160000.0, {"type": "ntk", "factor": 1.0}, 64)["rope_type"] == "default"
    with pytest.raises(ValueError, match="fixed NTK scaling only"):
        rope_parameters(160000.0, {"type": "ntk", "factor": 2.0, "mixed_b": 0.8}, 64)


@pytest.mark.parametrize("key, value", [("position_embedding_type", "absolute"), ("layer_norm_type", "rms_norm"),
                                        ("logn_attention_scale", True), ("hidden_act", "relu")])
def test_what_gte_cannot_compute_is_refused(key, value, tmp_path):
    config = {"model_type": "new", "vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 1,
              "num_attention_heads": 2, "intermediate_size": 32, "rope_theta": 10000.0, key: value}
    with pytest.raises(ValueError, match=f"{key}="):
        gte_config_dict(config)
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "vocab.txt").write_text("\n".join(f"t{i}" for i in range(32)) + "\n")
    with pytest.raises(InputError) as err:
        load_mlm(str(tmp_path), "paper.yaml", "backbones.gte-mlm.model")
    line = str(err.value)
    assert line.startswith("paper.yaml: backbones.gte-mlm.model: ") and "\n" not in line and f"{key}=" in line
