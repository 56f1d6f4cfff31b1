"""Everything about a run config that can be checked before the first job starts, in one place: ``lsrbench
check-config`` and the Snakefile both call :func:`check_config` (the Snakefile before it builds the DAG, so a
dry run already shows the error and no job, and so no finished output, is touched)."""

from __future__ import annotations

import math
from collections import deque
from pathlib import Path

from lsrbench.config.entries import load_datasets_file
from lsrbench.config.grid import backbone_modes, k_lists, n_triplets, probe_settings, probed_ks, runs
from lsrbench.config.layers import ConfigOrigins
from lsrbench.config.schema import canonical_order, load_schema, validate
from lsrbench.validation.ranges import as_read, check_ranges
from lsrbench.errors import InputError
from lsrbench.model.head_match import check_head_scale_matches, numeric_head_scale
from lsrbench.names import (BM25, COLLAPSED, DATASET_PATTERN, DEFAULT_MODE, DOC_DIMS, FLOPS, POOLED, PROBE_K,
                            QUERY_DIMS, RESERVED_RUN_NAMES, SYMBOLIC_KS, format_k, k_text_problem, k_value,
                            name_problem)

__all__ = ["check_config", "check_mirror", "check_values", "produced_measures"]

# The float32 range the head is divided (k) and multiplied (head_scale) in: normal numbers only.
FLOAT32_MAX = 3.4028234663852886e38
FLOAT32_MIN_NORMAL = 1.1754943508222875e-38
INT32_MAX = 2**31 - 1
# Measures every run has besides the ir_measures ones (lsrbench's own rows of metrics.tsv).
OWN_MEASURES = frozenset({FLOPS, QUERY_DIMS, DOC_DIMS, COLLAPSED})


def check_config(config: dict, config_file: str | Path, origins: ConfigOrigins | None = None, *, files: bool = True,
                 record: str | Path | None = None, mirror_must_exist: bool = True) -> dict:
    """Validate a (merged) run config, its cross-references and, with ``files``, the files it names (``record``:
    see :func:`lsrbench.validation.files.check_files`), a named mirror first (:func:`check_mirror`; not for the
    prefetch target, which creates it: ``mirror_must_exist``); returns it with the schema's defaults filled and
    the dataset registry under ``_datasets``."""
    try:
        return _check_config(config, config_file, files, record, mirror_must_exist)
    except InputError as exc:
        if origins is None or exc.file != str(config_file):
            raise
        raise InputError(origins.file_for(exc.field), exc.field, exc.message) from None


def _check_config(config: dict, config_file, files: bool, record, mirror_must_exist: bool) -> dict:
    check_values(config, config_file)
    check_ranges(config, config_file)  # as written: before the schema makes an integral float an integer
    # in the schema's order: a config whose keys are written in another order is the same config
    config = canonical_order(validate(config, "config.schema.yaml", config_file), load_schema("config.schema.yaml"))
    datasets = load_datasets_file(config["datasets_file"])
    check_values(datasets, config["datasets_file"])
    datasets = canonical_order(datasets, load_schema("datasets.schema.yaml"))
    _check_dataset_names(config, datasets, config_file)
    _check_numbers(config, config_file)
    _check_evaluate_only(config, config_file)
    _check_names(config, config_file)
    produced = produced_measures(config, datasets, config_file)
    _check_auto_k(config, config_file)
    _check_report(config, produced, config_file)
    _check_claims(config, produced, config_file)
    config["_datasets"] = datasets
    if mirror_must_exist:
        check_mirror(config, config_file)
    from lsrbench.model.remote_code import check_remote_code

    check_remote_code(config, config_file, prefetching=not mirror_must_exist)
    if files:
        from lsrbench.validation.files import check_files

        check_files(config, config_file, record)
    return config


def check_mirror(config: dict, config_file: str | Path) -> None:
    """A mirror that is named must be a folder: a misspelt one would otherwise silently fall back to
    downloading (or fail deep inside a job on a machine without internet)."""
    mirror = config.get("mirror")
    if mirror is not None and not Path(str(mirror)).expanduser().is_dir():
        raise InputError(config_file, "mirror", f"mirror folder '{mirror}' does not exist "
                                                "(a folder laid out like ../shared: data/<dataset>/, models/<name>/)")


# --------------------------------------------------------------------------- values


def check_values(data, file) -> None:
    """Refuse a mapping key that is not a string and a number that is not finite, anywhere in ``data``
    (the first in file order of the shallowest level that has one)."""
    queue = deque([(data, "")])
    while queue:
        value, field = queue.popleft()
        if isinstance(value, dict):
            for key, sub in value.items():
                if not isinstance(key, str):
                    raise InputError(file, field or "(top level)", f"key {key!r} is not a string (quote it)")
                queue.append((sub, f"{field}.{key}" if field else key))
        elif isinstance(value, list):
            queue.extend((sub, f"{field}[{i}]") for i, sub in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            raise InputError(file, field, f"must be a finite number, got {value}")


# --------------------------------------------------------------------------- datasets and numbers


def _check_dataset_names(config: dict, datasets: dict, file) -> None:
    from lsrbench.data.training_sources import check_training_data

    datasets_file, folders = config["datasets_file"], {POOLED.casefold(): POOLED}
    for i, name in enumerate(config["evaluation"]["datasets"]):
        field = f"evaluation.datasets[{i}]"
        if name == POOLED:
            raise InputError(file, field, f"'{POOLED}' is reserved for FLOPs pooled over report.flops_datasets")
        if name not in datasets:
            raise InputError(file, field, f"dataset '{name}' is not defined in {datasets_file}")
        problem = name_problem(name, DATASET_PATTERN) or (folders.get(name.casefold()) and
                                                          f"'{name}' and '{folders[name.casefold()]}' name one folder "
                                                          "where a filesystem ignores case (macOS, Windows)")
        if problem:
            raise InputError(file, field, problem)
        folders[name.casefold()] = name
    td = config["training_data"]
    check_training_data(td, file)
    if td["source"] == "pseudo_queries" and td["dataset"] not in datasets:
        raise InputError(file, "training_data.dataset", f"dataset '{td['dataset']}' is not defined in {datasets_file}")
    for name, entry in config["backbones"].items():
        refit = entry.get("mlm_refit")
        if refit and refit["dataset"] not in datasets:
            raise InputError(file, f"backbones.{name}.mlm_refit.dataset",
                             f"dataset '{refit['dataset']}' is not defined in {datasets_file}")


def _check_ks(field: str, ks: list, file) -> None:
    seen: dict[str, object] = {}
    for i, k in enumerate(ks):
        problem = k_text_problem(k)
        if problem is None and k not in SYMBOLIC_KS and not FLOAT32_MIN_NORMAL <= k <= FLOAT32_MAX:
            problem = f"{k!r} is outside float32, the type the head is divided in"
        if problem is None and format_k(k) in seen:
            problem = f"{k!r} is the same k as {seen[format_k(k)]!r} (both name the run k{format_k(k)})"
        if problem:
            raise InputError(file, f"{field}[{i}]", problem)
        seen[format_k(k)] = k


def _check_numbers(config: dict, file) -> None:
    _check_ks("k_grid", config["k_grid"], file)  # also when every backbone has its own k
    _check_ks("probe.k_grid", probe_settings(config)["k_grid"], file)
    check_head_scale_matches(config, file)  # a matched head_scale names another, measured backbone
    for backbone, entry in config["backbones"].items():
        scale = numeric_head_scale(entry)
        if not FLOAT32_MIN_NORMAL <= scale <= FLOAT32_MAX:
            raise InputError(file, f"backbones.{backbone}.head_scale",
                             f"{scale!r} is outside float32, the type the head is multiplied in")
        for field, ks in k_lists(config, backbone).values():
            _check_ks(field, ks, file)
    if n_triplets(config) > INT32_MAX:
        raise InputError(file, "recipe.steps", f"steps x batch_size = {n_triplets(config)} training triplets, "
                                               f"more than {INT32_MAX}")


def _check_evaluate_only(config: dict, file) -> None:
    for name, entry in config["backbones"].items():
        if not entry["evaluate_only"]:
            continue
        field = f"backbones.{name}"
        if "k" in entry and [format_k(k) for k in entry["k"]] != ["1"]:
            raise InputError(file, f"{field}.k", "an evaluate_only backbone is evaluated as released, at k = 1: "
                                                 "remove k (or write [1])")
        modes = entry.get("modes")
        one_run = (modes is None or modes == [DEFAULT_MODE]
                   or (isinstance(modes, dict) and list(modes) == [DEFAULT_MODE]
                       and [format_k(k) for k in modes[DEFAULT_MODE]] == ["1"]))
        if not one_run:
            raise InputError(file, f"{field}.modes", "an evaluate_only backbone has one run, shared mode at k = 1: "
                                                     "remove modes")


# --------------------------------------------------------------------------- names


def _check_names(config: dict, file) -> None:
    from lsrbench.report.results import OWN_COLUMNS, bm25_label, run_label

    folders = {name.casefold(): name for name in RESERVED_RUN_NAMES}
    for name in config["backbones"]:
        if name in RESERVED_RUN_NAMES:
            raise InputError(file, f"backbones.{name}", f"'{name}' names the reference row lsrbench adds to every table")
        problem = name_problem(name) or (folders.get(name.casefold()) and
                                         f"'{name}' and '{folders[name.casefold()]}' name one folder where a "
                                         "filesystem ignores case (macOS, Windows)")
        if problem:
            raise InputError(file, f"backbones.{name}", problem)
        folders[name.casefold()] = name
    _check_labels(config, file, bm25_label(config["report"]), run_label)
    columns = {as_read(c): c for c in OWN_COLUMNS}
    for i, col in enumerate(config["report"]["columns"]):
        field = f"report.columns[{i}].name"
        if as_read(col["name"]) in columns:
            raise InputError(file, field, f"column '{col['name']}' is already a column of the tables"
                                          + _shown_as(col["name"], columns[as_read(col["name"])]))
        _check_cell_text(col["name"], file, field)
        columns[as_read(col["name"])] = col["name"]
    ids: set[str] = set()
    for i, claim in enumerate((config.get("claims") or {}).get("list", [])):
        if as_read(claim["id"]) in ids:
            raise InputError(file, f"claims.list[{i}].id", f"claim id '{claim['id']}' is used twice")
        ids.add(as_read(claim["id"]))


def _shown_as(text: str, other: str) -> str:
    return "" if text == other else f" ('{other}', as a reader sees it)"


def _check_labels(config: dict, file, bm25: str, run_label) -> None:
    labels: dict[str, tuple[str, str]] = {as_read(bm25): (BM25, bm25)}
    for run, _ in runs(config):
        label = run_label(run, config["backbones"])
        field = f"backbones.{run.split('+')[0]}.label"
        other, shown = labels.get(as_read(label), (run, label))
        if other != run:
            raise InputError(file, field, f"'{label}' is also how {other} is shown{_shown_as(label, shown)}: "
                                          "their table rows could not be told apart")
        labels[as_read(label)] = (run, label)
        _check_cell_text(label, file, field)


def _check_cell_text(text: str, file, field: str) -> None:
    if not text.strip() or "|" in text or "\n" in text or "\r" in text:
        raise InputError(file, field, f"{text!r} cannot be a table cell (empty, or a '|' or line break in it)")


# --------------------------------------------------------------------------- measures and references


def _parse_measures(names: list[str], top_k: int | None, file, field: str) -> set[str]:
    from lsrbench.evaluate.metrics import parse_measures

    out = set()
    for i, name in enumerate(names):
        try:
            measure = parse_measures([name])[0]
        except InputError as exc:
            raise InputError(file, f"{field}[{i}]", exc.message) from None
        cutoff = measure.params.get("cutoff")
        if top_k is not None and cutoff is not None and cutoff > top_k:
            raise InputError(file, f"{field}[{i}]", f"{name} reads {cutoff} documents per query, but evaluation.top_k "
                                                    f"keeps {top_k} (its value would be that of a cutoff of {top_k}): "
                                                    f"raise evaluation.top_k to {cutoff} or lower the cutoff")
        out.add(str(measure))
    return out


def produced_measures(config: dict, datasets: dict, file) -> dict[str, set[str]]:
    """Evaluated dataset -> the measure names its metrics.tsv will have (its own ``measures`` from
    the registry, else ``evaluation.measures``, parsed by ir_measures; FLOPs, active dims, collapsed)."""
    top_k, evaluated = config["evaluation"]["top_k"], config["evaluation"]["datasets"]
    used = any(datasets[name].get("measures") is None for name in evaluated)  # else only parsed, never computed
    default = _parse_measures(config["evaluation"]["measures"], top_k if used else None, file, "evaluation.measures")
    produced = {}
    for name in evaluated:
        own = datasets[name].get("measures")
        parsed = _parse_measures(own, top_k, config["datasets_file"], f"{name}.measures") if own is not None else default
        produced[name] = parsed | OWN_MEASURES
    return produced


def _check_measure(measure: str, datasets: list[str], produced: dict, file, field: str) -> None:
    missing = [d for d in datasets if measure not in produced[d]]
    if not missing:
        return
    hint = ""
    try:
        spelled = str(_single_measure(measure))
        if spelled != measure and all(spelled in produced[d] for d in datasets):
            hint = f"; metrics.csv spells it '{spelled}'"
    except InputError:
        hint = " (not a measure ir_measures knows)"
    raise InputError(file, field, f"measure '{measure}' is not computed on {', '.join(missing)}"
                                  f" (evaluation.measures or the dataset's measures){hint}")


def _single_measure(name: str):
    from lsrbench.evaluate.metrics import parse_measures

    return parse_measures([name])[0]


def _check_datasets(names: list[str], evaluated: set, file, field: str) -> None:
    for j, name in enumerate(names):
        if name not in evaluated:
            raise InputError(file, f"{field}[{j}]", f"dataset '{name}' is not evaluated (evaluation.datasets)")


def _check_report(config: dict, produced: dict, file) -> None:
    report, evaluated = config["report"], set(config["evaluation"]["datasets"])
    for i, col in enumerate(report["columns"]):
        _check_datasets(col["datasets"], evaluated, file, f"report.columns[{i}].datasets")
        _check_measure(col["measure"], col["datasets"], produced, file, f"report.columns[{i}].measure")
    _check_datasets(report["flops_datasets"], evaluated, file, "report.flops_datasets")
    tradeoff_datasets = report["flops_datasets"] or sorted(evaluated)
    _check_measure(report["tradeoff_measure"], tradeoff_datasets, produced, file, "report.tradeoff_measure")
    if not any(report["beir_measure"] in measures for measures in produced.values()):
        _check_measure(report["beir_measure"], sorted(evaluated), produced, file, "report.beir_measure")
    from lsrbench.config.reference import check_reference

    check_reference(config, file)


def _check_auto_k(config: dict, file) -> None:
    """``k: auto`` and ``k: probe`` have a reference backbone to divide by (or to cross); ``k: probe`` a probed k
    besides 1 to read the crossing off, and the probe enough triplets for one batch."""
    for symbol in SYMBOLIC_KS:
        users = [n for n in config["backbones"] if any(symbol in ks for ks in backbone_modes(config, n).values())]
        if not users:
            continue
        reference = (config.get("auto_k") or {}).get("reference")
        if reference is None:
            raise InputError(file, f"backbones.{users[0]}.k", f"k: {symbol} needs auto_k.reference (the backbone "
                                                              "whose head is k = 1)")
        if reference not in config["backbones"]:
            raise InputError(file, "auto_k.reference", f"backbone '{reference}' is not defined under backbones")
    for name in config["backbones"]:
        for mode, ks in backbone_modes(config, name).items():
            probed = [k for m, k in probed_ks(config, name) if m == mode and k_value(k) is not None]
            if PROBE_K in ks and len(probed) < 2:
                raise InputError(file, k_lists(config, name)[mode][0],
                                 f"k: probe reads the crossing off the probed k, and {mode} mode probes k = 1 only: "
                                 "add k to probe.k_grid (e.g. [2, 4, 8, 16, 32])")
    batch, triplets = config["recipe"]["batch_size"], probe_settings(config)["triplets"]
    if triplets < batch:
        raise InputError(file, "probe.triplets", f"{triplets} triplets cannot fill one batch of recipe.batch_size "
                                                 f"({batch}), which the probe measures in")


def _run_ks(config: dict) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for run, k in runs(config):
        out.setdefault(run, set()).add(k)
    return out


def _check_claims(config: dict, produced: dict, file) -> None:
    claims = config.get("claims")
    if not claims:
        return
    from lsrbench.report.claims.engine import claim_type

    evaluated, run_ks = set(config["evaluation"]["datasets"]), _run_ks(config)
    _check_datasets(claims["datasets"], evaluated, file, "claims.datasets")
    _check_measure(claims["measure"], claims["datasets"], produced, file, "claims.measure")
    select = claims.get("select_on")
    if select:  # where best k is chosen: evaluated datasets with the selection measure
        _check_datasets(select["datasets"], evaluated, file, "claims.select_on.datasets")
        _check_measure(select.get("measure", claims["measure"]), select["datasets"], produced, file,
                       "claims.select_on.measure")
    for i, spec in enumerate(claims["list"]):
        field = f"claims.list[{i}]"
        datasets = spec.get("datasets", claims["datasets"])
        _check_datasets(datasets, evaluated, file, f"{field}.datasets")
        _check_measure(spec.get("measure", claims["measure"]), datasets, produced, file, f"{field}.measure")
        for run_field, run, k_field, k in claim_type(spec["type"]).runs(spec):
            if run not in run_ks:
                raise InputError(file, f"{field}.{run_field}", f"run '{run}' is not in this config's grid "
                                                               f"(runs: {', '.join(sorted(run_ks))})")
            if k is not None and k not in ("best", "max") and format_k(k) not in run_ks[run]:
                raise InputError(file, f"{field}.{k_field}", f"k {format_k(k)} is not swept for {run} "
                                                             f"(k: {', '.join(sorted(run_ks[run], key=_k_sort))})")


def _k_sort(k: str) -> float:
    value = k_value(k)
    return math.inf if value is None else value
