"""``k: auto``: the rescale factor read off the head norms instead of swept, the backbone's head norm
over a reference backbone's (a head ``c`` times larger than the reference's gets ``k = c``, which
makes its rescaled head the reference's size). One definition for training and the reports."""

from __future__ import annotations

import json
import math
from pathlib import Path

__all__ = ["auto_k_ratio", "auto_k_from_files"]


def auto_k_ratio(norms: dict, reference_norms: dict, statistic: str) -> float:
    """``norms[statistic] / reference_norms[statistic]`` (head-norm records of the norm stage)."""
    ratio = float(norms[statistic]) / float(reference_norms[statistic])
    if not (math.isfinite(ratio) and ratio > 0):
        raise ValueError(f"k auto: {statistic} ratio {norms[statistic]!r} / {reference_norms[statistic]!r} "
                         "is not a positive number")
    return ratio


def auto_k_from_files(norms_json: str, reference_norms_json: str, auto_cfg: dict) -> float:
    """:func:`auto_k_ratio` of two norm files, with the config's ``auto_k.statistic``."""
    mine = json.loads(Path(norms_json).read_text(encoding="utf-8"))
    ref = json.loads(Path(reference_norms_json).read_text(encoding="utf-8"))
    return auto_k_ratio(mine, ref, auto_cfg["statistic"])
