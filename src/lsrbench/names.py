"""Names several modules must spell the same way: run names (a backbone, or ``<backbone>+<mode>``), k as text,
reserved names, tidy metric columns and lsrbench's own measure names."""

from __future__ import annotations

import math
import re
import sys

MODE_SEPARATOR = "+"
DEFAULT_MODE = "shared"

# The metrics column naming a row's run; its header stays "backbone" so finished files keep their bytes.
RUN_COLUMN = "backbone"
METRIC_COLUMNS = [RUN_COLUMN, "k", "dataset", "measure", "value"]
# With several training seeds metrics.csv adds the seed after k (NO_SEED for BM25 and released checkpoints).
SEED = "seed"
SEEDED_METRIC_COLUMNS = [RUN_COLUMN, "k", SEED, "dataset", "measure", "value"]
NO_SEED = "-"
PERQUERY_COLUMNS = ["query_id", "measure", "value"]

MANIFESTS = "manifests"

# Measures lsrbench computes itself, beside ir_measures' names.
FLOPS = "FLOPs"
QUERY_DIMS = "query_active_dims"
DOC_DIMS = "doc_active_dims"
COLLAPSED = "collapsed"

BM25 = "BM25"
NO_K = "-"
AUTO_K = "auto"
# k read off the step-0 probe (docs/probe.md).
PROBE_K = "probe"
SYMBOLIC_KS = (AUTO_K, PROBE_K)
# The "dataset" of FLOPs pooled over report.flops_datasets; never a dataset's name.
POOLED = "pooled_flops"


def run_name(backbone: str, mode: str) -> str:
    """The name a run variant carries in paths, metrics.csv and tables."""
    return backbone if mode == DEFAULT_MODE else f"{backbone}{MODE_SEPARATOR}{mode}"


def split_run_name(run: str) -> tuple[str, str]:
    """Inverse of :func:`run_name`: ``(backbone, mode)``."""
    base, _, mode = run.partition(MODE_SEPARATOR)
    return base, mode or DEFAULT_MODE


def format_k(k) -> str:
    """Canonical text of a rescale factor, as used in paths and tables: 1, 4, 16, 2.5, auto, probe."""
    if k in SYMBOLIC_KS:
        return k
    k = float(k)
    return str(int(k)) if k.is_integer() else repr(k)


def k_value(text) -> float | None:
    """The number a k text stands for; None for ``auto``, ``probe``, BM25's ``-`` and anything not a finite number."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def k_order(k: str) -> float:
    """Sort key for k: BM25's ``-`` first, numbers ascending, then ``probe``, then ``auto``."""
    if k == NO_K:
        return -1.0
    value = k_value(k)
    if value is None:
        return sys.float_info.max if k == PROBE_K else float("inf")
    return value


# Names that become file or folder names.
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]*"
SAFE_NAME = re.compile(rf"^{NAME_PATTERN}$")
# Longest name that becomes one path component (file systems allow 255 bytes).
MAX_NAME_LENGTH = 100

# The Snakefile's wildcard constraints: the config check refuses what they would not match.
RUN_PATTERN = rf"{NAME_PATTERN}(\{MODE_SEPARATOR}untie)?"
K_PATTERN = r"auto|probe|[0-9]+(\.[0-9]+)?(e-?[0-9]+)?"
DATASET_PATTERN = rf"(?!{POOLED}\b){NAME_PATTERN}"

# Row names of lsrbench's own: no backbone may take them.
RESERVED_RUN_NAMES = (BM25,)


def name_problem(name: str, pattern: str = NAME_PATTERN) -> str | None:
    """Why ``name`` cannot be a path component that ``pattern`` (a wildcard constraint) matches, or None."""
    if not isinstance(name, str) or re.fullmatch(pattern, name) is None:
        return f"{name!r} is not a name the workflow can use (letters, digits, '.', '_', '-'; not starting with '.', '_' or '-')"
    if len(name) > MAX_NAME_LENGTH:
        return f"{len(name)} characters, more than {MAX_NAME_LENGTH} (it becomes a file name)"
    return None


def k_text_problem(k) -> str | None:
    """Why the rescale factor ``k`` cannot name a run (outside :data:`K_PATTERN` or too long), or None."""
    if k in SYMBOLIC_KS:
        return None
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k) or k <= 0:
        return f"{k!r} is not a finite positive number"
    return name_problem(format_k(k), K_PATTERN)
COMMIT = re.compile(r"^[0-9a-f]{40}$")


def is_commit(text) -> bool:
    """Whether ``text`` is a full 40-hex-digit commit hash."""
    return isinstance(text, str) and COMMIT.match(text) is not None
