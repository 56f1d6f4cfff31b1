"""A backbone's MLM head scaled at load to another backbone's measured head scale: the control separating the
head's scale from the rest of a backbone (docs/claims.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from lsrbench.errors import InputError
from lsrbench.model.auto_k import NORM_STATISTICS, read_head_statistic

__all__ = ["MATCH_STATISTICS", "is_matched", "match_of", "matched_scale", "apply_head_scale", "loaded_head_scale",
           "numeric_head_scale", "check_head_scale_matches"]

# The statistics a head scale may be matched on: the norm stage's per-term ones (see the module's
# docstring for why not frobenius_norm).
MATCH_STATISTICS = tuple(s for s in NORM_STATISTICS if s != "frobenius_norm")


def is_matched(entry: dict) -> bool:
    """Whether a backbone entry's ``head_scale`` is matched to another backbone (a mapping)."""
    return isinstance(entry.get("head_scale"), dict)


def match_of(entry: dict) -> str | None:
    """The backbone whose head statistic a matched ``head_scale`` reads, else None."""
    return entry["head_scale"]["match"] if is_matched(entry) else None


def numeric_head_scale(entry: dict) -> float:
    """A numeric ``head_scale`` (a synthetic twin's), 1 for none or a matched one (known only at run time)."""
    scale = entry["head_scale"]
    return 1.0 if isinstance(scale, dict) else float(scale)


def matched_scale(own_norms: dict, match_norms_json: str, spec: dict) -> dict:
    """The record of a matched head scale: both statistics and their ratio."""
    statistic = spec["statistic"]
    target = read_head_statistic(match_norms_json, statistic)
    own = float(own_norms[statistic])
    if not (math.isfinite(own) and own > 0):
        raise ValueError(f"head_scale: this backbone's {statistic} is {own!r}: no finite positive scale to match")
    return {"match": spec["match"], "statistic": statistic, "mode": spec["mode"], "target": target,
            "own": own, "ratio": target / own}


def apply_head_scale(model, scale: float, mode: str = "shared"):
    """Multiply the MLM head's weight by ``scale`` in ``mode`` (``untie``: the head alone)."""
    from lsrbench.model.rescale import rescale_mlm_head

    if scale != 1.0 or mode == "untie":
        rescale_mlm_head(model, 1.0 / scale, mode)
    return model


def loaded_head_scale(entry: dict, norms_json: str | None, match_norms_json: str | None = None) -> tuple[float, str]:
    """``(factor, mode)`` the head is multiplied by at load: a number, or the ratio recorded in ``norms_json``,
    checked against the matched backbone's statistic when given."""
    if not is_matched(entry):
        return numeric_head_scale(entry), "shared"
    record = json.loads(Path(norms_json).read_text(encoding="utf-8")).get("head_scale_match")
    if not isinstance(record, dict) or "ratio" not in record:
        raise InputError(norms_json, "head_scale_match", "no matched head scale recorded: this norm file was made "
                                                         "without the backbone's head_scale.match")
    if match_norms_json is not None:
        now = read_head_statistic(match_norms_json, record["statistic"])
        if not math.isclose(now, record["target"], rel_tol=1e-9):
            raise InputError(match_norms_json, record["statistic"], f"{now!r}, but {norms_json} was scaled to match "
                                                                    f"{record['target']!r}: re-run its norm job")
    return float(record["ratio"]), record["mode"]


def check_head_scale_matches(config: dict, file) -> None:
    """Every matched ``head_scale`` names another backbone whose own scale is not matched, else a one-line
    InputError."""
    backbones = config["backbones"]
    for name, entry in backbones.items():
        if not is_matched(entry):
            continue
        match, field = entry["head_scale"]["match"], f"backbones.{name}.head_scale.match"
        if match not in backbones:
            raise InputError(file, field, f"{match!r} is not a backbone of this config ({', '.join(backbones)})")
        if match == name:
            raise InputError(file, field, f"{match!r} is this backbone: its head would be matched to itself")
        if is_matched(backbones[match]):
            raise InputError(file, field, f"{match!r} has a matched head_scale itself: match a backbone whose head "
                                          "is measured as loaded")
