"""The paper's reported numbers (``report.reference``): its values per (backbone, k, column) and its best k per
backbone."""

from __future__ import annotations

import math

from lsrbench.config.strict_yaml import load_yaml
from lsrbench.errors import InputError
from lsrbench.names import format_k, k_value, split_run_name

__all__ = ["load_reference", "read_reference", "check_reference"]


def load_reference(path: str | None, columns: list[str] | None = None) -> dict:
    """The paper's values ``{backbone: {k: {column: value}}}``, each finite and, with ``columns``, a known
    column; one-line InputError otherwise."""
    if not path:
        return {}
    values = load_yaml(path).get("values", {})
    if not isinstance(values, dict):
        raise InputError(path, "values", "must map backbones to {k: {column: value}}")
    out: dict[str, dict[str, dict]] = {}
    for backbone, ks in values.items():
        if not isinstance(ks, dict):
            raise InputError(path, f"values.{backbone}", "must map k to {column: value}")
        for k, cells in ks.items():
            field = f"values.{backbone}.{k}"
            if not isinstance(cells, dict):
                raise InputError(path, field, "must map table column names to the paper's values")
            for column, value in cells.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                    raise InputError(path, f"{field}.{column}", f"must be a finite number, got {value!r}")
                if columns is not None and column not in columns:
                    raise InputError(path, f"{field}.{column}", f"not a column of the table (report.columns: {', '.join(columns)})")
            out.setdefault(str(backbone), {})[format_k(k) if k_value(k) is not None else str(k)] = cells
    return out


def read_reference(path: str | None) -> dict:
    """The whole reference file for the claims: ``values`` and ``optimal_k``; empty without a file."""
    if not path:
        return {}
    data = load_yaml(path)
    optimal = data.get("optimal_k", {}) or {}
    if not isinstance(optimal, dict):
        raise InputError(path, "optimal_k", "must map backbones to the paper's best k")
    for backbone, k in optimal.items():
        if k_value(k) is None or k_value(k) <= 0:
            raise InputError(path, f"optimal_k.{backbone}", f"must be a positive number, got {k!r}")
    load_reference(path)
    return {**data, "values": data.get("values", {}) or {}, "optimal_k": optimal}


def check_reference(config: dict, file) -> None:
    """``report.reference`` gives this config's own backbones values only in its report columns (a
    misspelt column would leave them out of Table 1) and holds ``claims.paper_column``;
    ``claims.paper_runs`` names this config's backbones (a misspelt one would show no paper number)."""
    reference, claims = config["report"].get("reference"), config.get("claims") or {}
    column = claims.get("paper_column")
    for backbone in claims.get("paper_runs") or {}:
        if backbone not in config["backbones"]:
            raise InputError(file, f"claims.paper_runs.{backbone}",
                             f"not a backbone of this config (backbones: {', '.join(config['backbones'])})")
    if column and not reference:
        raise InputError(file, "claims.paper_column", "needs report.reference, the file whose column it is")
    if not reference:
        return
    values, columns = load_reference(reference), [c["name"] for c in config["report"]["columns"]]
    for backbone, ks in values.items():
        for k, cells in ks.items():
            wrong = [c for c in cells if c not in columns] if split_run_name(backbone)[0] in config["backbones"] else []
            if wrong:
                raise InputError(reference, f"values.{backbone}.{k}.{wrong[0]}",
                                 f"not a column of the table (report.columns: {', '.join(columns)})")
    if column and not any(column in cells for ks in values.values() for cells in ks.values()):
        raise InputError(file, "claims.paper_column", f"'{column}' is not a column of {reference}")
