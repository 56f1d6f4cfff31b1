"""Names that several stages must spell the same way: run names, k as text, reserved names,
the columns of tidy metric files and the measure names lsrbench adds to ir_measures' own.

A *run* is one (backbone, mode) variant of the grid: the backbone's own name for the paper's
``shared`` mode, ``<backbone>+<mode>`` otherwise (``+`` is not allowed in backbone names). Its
k is written as :func:`format_k` gives it (``1``, ``4``, ``2.5``, ``auto``) in every path, table
and metrics row.
"""

from __future__ import annotations

import math
import re

MODE_SEPARATOR = "+"
DEFAULT_MODE = "shared"

# The columns of every tidy metrics file (per-run metrics.tsv and results/metrics.csv).
METRIC_COLUMNS = ["backbone", "k", "dataset", "measure", "value"]
# The columns of a per-query metrics file (perquery.tsv).
PERQUERY_COLUMNS = ["query_id", "measure", "value"]

# Measures lsrbench computes itself, beside the ir_measures names (nDCG@10, RR@10, ...).
FLOPS = "FLOPs"
QUERY_DIMS = "query_active_dims"
DOC_DIMS = "doc_active_dims"
COLLAPSED = "collapsed"

# The reference row of every table and its k (it has none).
BM25 = "BM25"
NO_K = "-"
AUTO_K = "auto"
# The "dataset" of FLOPs and active dims pooled over several datasets (report.flops_datasets) the
# way sentence-transformers' SparseNanoBEIREvaluator pools them; never a dataset's name.
POOLED = "pooled_flops"


def run_name(backbone: str, mode: str) -> str:
    """The name a run variant carries in paths, metrics.csv and tables."""
    return backbone if mode == DEFAULT_MODE else f"{backbone}{MODE_SEPARATOR}{mode}"


def split_run_name(run: str) -> tuple[str, str]:
    """Inverse of :func:`run_name`: ``(backbone, mode)``."""
    base, _, mode = run.partition(MODE_SEPARATOR)
    return base, mode or DEFAULT_MODE


def format_k(k) -> str:
    """Canonical text of a rescale factor, as used in paths and tables: 1, 4, 16, 2.5, auto."""
    if k == AUTO_K:
        return AUTO_K
    k = float(k)
    return str(int(k)) if k.is_integer() else repr(k)


def k_value(text) -> float | None:
    """The number a k text stands for; None for ``auto``, BM25's ``-`` and anything not a finite number."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def k_order(k: str) -> float:
    """Sort key for k: BM25's ``-`` first, numbers ascending, ``auto`` last."""
    if k == NO_K:
        return -1.0
    value = k_value(k)
    return float("inf") if value is None else value


# Names that become file or folder names (datasets, splits, BEIR downloads, triplet folders),
# the same pattern the config schema gives backbone names.
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# A pinned hub revision: a full commit hash.
COMMIT = re.compile(r"^[0-9a-f]{40}$")


def is_commit(text) -> bool:
    """Whether ``text`` is a full 40-hex-digit commit hash."""
    return isinstance(text, str) and COMMIT.match(text) is not None
