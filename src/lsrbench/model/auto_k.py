"""``k: auto``: the rescale factor read off the head norms, the backbone's head statistic over a reference
backbone's (:data:`HEAD_STATISTICS`: the norm stage's row norms or the probe's logit scale at k = 1)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from lsrbench.errors import InputError
from lsrbench.model.probe_names import LOGIT_STATISTICS

__all__ = ["NORM_STATISTICS", "HEAD_STATISTICS", "REPORTED_HEAD_STATISTICS", "head_statistics", "probe_at_k1", "auto_k_ratio",
           "read_head_statistic", "auto_k_from_files"]

# The head's norms (norms.json), and every statistic k auto and the claims may use.
NORM_STATISTICS = ("frobenius_norm", "mean_row_norm", "max_row_norm")
HEAD_STATISTICS = NORM_STATISTICS + LOGIT_STATISTICS
# The head statistics the reports show per backbone.
REPORTED_HEAD_STATISTICS = ("frobenius_norm", "mean_row_norm", "max_logit")


def probe_at_k1(probes: list[dict], backbone: str) -> dict | None:
    """The probe of ``backbone`` as loaded (k = 1, shared mode) among probe results, or None."""
    return next((p for p in probes if p.get("backbone") == backbone and p.get("mode", "shared") == "shared"
                 and p.get("k_value") == 1.0), None)


def head_statistics(norms: dict, probe: dict | None = None) -> dict:
    """One backbone's head statistics: its ``norms.json`` fields plus the probe's logit-scale statistics at k = 1
    (``norms.json`` itself is never rewritten)."""
    return {**norms, **{s: probe[s] for s in LOGIT_STATISTICS if probe and probe.get(s) is not None}}


def auto_k_ratio(norms: dict, reference_norms: dict, statistic: str) -> float:
    """``norms[statistic] / reference_norms[statistic]`` (head-norm records of the norm stage)."""
    ratio = float(norms[statistic]) / float(reference_norms[statistic]) if float(reference_norms[statistic]) else math.nan
    if not (math.isfinite(ratio) and ratio > 0):
        raise ValueError(f"k auto: {statistic} ratio {norms[statistic]!r} / {reference_norms[statistic]!r} "
                         "is not a positive number")
    return ratio


def _statistic_record(norms_json: str, probe_json: str | None, statistic: str) -> tuple[str, dict]:
    path = probe_json if statistic in LOGIT_STATISTICS else norms_json
    if path is None:
        raise InputError(norms_json, statistic, "a logit-scale statistic comes from the probe at k = 1, and no probe "
                                                "result was given")
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(path, None, f"not a head-norm record ({' '.join(str(exc).split())})") from None
    if isinstance(record, list):
        record = next((p for p in record if isinstance(p, dict) and p.get("mode", "shared") == "shared"
                       and p.get("k_value") == 1.0), {})
    return path, record


def read_head_statistic(path: str, statistic: str, probe_json: str | None = None) -> float:
    """One statistic of a norm or probe file, finite and positive, else a one-line InputError naming the
    file."""
    path, record = _statistic_record(path, probe_json, statistic)
    try:
        value = record.get(statistic)
    except AttributeError as exc:
        raise InputError(path, None, f"not a head-norm record ({' '.join(str(exc).split())})") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise InputError(path, statistic, f"{value!r}: k auto divides head norms, which must be finite and positive "
                                          "(a head of all zeros has none)")
    return float(value)


def auto_k_from_files(norms_json: str, reference_norms_json: str, auto_cfg: dict, probe_json: str | None = None,
                      reference_probe_json: str | None = None) -> float:
    """:func:`auto_k_ratio` of two norm (or probe) files with ``auto_k.statistic``; a bad norm is a one-line
    InputError naming its file."""
    statistic = auto_cfg["statistic"]
    mine = read_head_statistic(norms_json, statistic, probe_json)
    ref = read_head_statistic(reference_norms_json, statistic, reference_probe_json)
    return auto_k_ratio({statistic: mine}, {statistic: ref}, statistic)
