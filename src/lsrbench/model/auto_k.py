"""``k: auto``: the rescale factor read off the head norms instead of swept, the backbone's head norm
over a reference backbone's (a head ``c`` times larger than the reference's gets ``k = c``, which
makes its rescaled head the reference's size). One definition for training and the reports."""

from __future__ import annotations

import json
import math
from pathlib import Path

from lsrbench.errors import InputError

__all__ = ["auto_k_ratio", "auto_k_from_files"]


def auto_k_ratio(norms: dict, reference_norms: dict, statistic: str) -> float:
    """``norms[statistic] / reference_norms[statistic]`` (head-norm records of the norm stage)."""
    ratio = float(norms[statistic]) / float(reference_norms[statistic]) if float(reference_norms[statistic]) else math.nan
    if not (math.isfinite(ratio) and ratio > 0):
        raise ValueError(f"k auto: {statistic} ratio {norms[statistic]!r} / {reference_norms[statistic]!r} "
                         "is not a positive number")
    return ratio


def _head_norm(path: str, statistic: str) -> float:
    """One statistic of a norm file, which ``k: auto`` needs finite and positive."""
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8")).get(statistic)
    except (OSError, ValueError, AttributeError) as exc:
        raise InputError(path, None, f"not a head-norm record ({' '.join(str(exc).split())})") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise InputError(path, statistic, f"{value!r}: k auto divides head norms, which must be finite and positive "
                                          "(a head of all zeros has none)")
    return float(value)


def auto_k_from_files(norms_json: str, reference_norms_json: str, auto_cfg: dict) -> float:
    """:func:`auto_k_ratio` of two norm files, with the config's ``auto_k.statistic``; a norm that
    is missing, zero or not finite is a one-line InputError naming its file and the statistic."""
    statistic = auto_cfg["statistic"]
    mine, ref = _head_norm(norms_json, statistic), _head_norm(reference_norms_json, statistic)
    return auto_k_ratio({statistic: mine}, {statistic: ref}, statistic)
