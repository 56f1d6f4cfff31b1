"""``lsrbench verify`` for every report a reviewer reads besides metrics.csv and table1.md
(:mod:`lsrbench.report.verify.manifests`, :mod:`lsrbench.report.verify.table1`): each is made again, with
the same functions the report rules use, from the files it was made from and the settings of the
config snapshot it names (:mod:`lsrbench.report.verify.configs`), and compared with what is there:

- ``table_beir.md`` from metrics.csv;
- ``norms.md`` and the data of ``norms.png`` (``norms.data.json``) from the head-norm files;
- ``claims.md`` and ``claims.json``: every claim evaluated again (its tests re-run with their seed)
  from metrics.csv, the per-query scores, head norms and training logs ``claims.json`` names;
- the data of ``tradeoff.png`` and ``loss_curves.png`` (``<figure>.data.json``) from metrics.csv and
  the training logs, and each image against the SHA-256 recorded beside it;
- every ``html/<report>.html`` against its Markdown report.

metrics.csv's rows are traced by :mod:`lsrbench.report.verify.manifests`; every other run file a report was
made from must be vouched for by a manifest. A difference is named by its line and cell, or by its
claim and field (:mod:`lsrbench.report.verify.diff`)."""

from __future__ import annotations

import json
from pathlib import Path

from lsrbench.report.config_record import keyed, report_settings
from lsrbench.report.verify.trace import Trace, Where, where
from lsrbench.report.verify.configs import Snapshot
from lsrbench.report.verify.diff import report_differences, text_differences, value_differences

__all__ = ["verify_reports"]


def verify_reports(root: Path, stated: dict[Path, tuple[dict, Snapshot]], trace: Trace) -> None:
    """Every report of ``root`` besides metrics.csv and table1.md, made again and compared."""
    metrics_csv = root / "metrics.csv"
    if metrics_csv.is_file():
        for check, name in ((_chance, "chance.json"), (_table_beir, "table_beir.md"), (_norms, "norms.md"), (_claims, "claims.md"),
                            (_tradeoff, "tradeoff.png"), (_loss_curves, "loss_curves.png")):
            try:
                check(root, stated, trace)
            except Exception as exc:  # noqa: BLE001 - run files too damaged to make it from: named above, file by file
                trace.problems.append(f"{root / name}: cannot be made again from its run files "
                                      f"({type(exc).__name__}: {' '.join(str(exc).split())})")
    _html_pages(root, trace)


def _settings(stated, path: Path) -> tuple[dict, dict] | None:
    """The config record ``path`` states and the config of its snapshot (None where either is
    missing: already a problem of :func:`lsrbench.report.verify.configs.check_configs`)."""
    record, snapshot = stated.get(path, (None, None))
    return (record, snapshot.config) if snapshot is not None and snapshot.config is not None else None


def _origin(files: list, config: dict) -> str:
    return " and ".join(str(f) for f in files) + f" with config {config['id']}"


def _compare_text(path: Path, fresh: str, origin: str, trace: Trace) -> None:
    trace.counts["reports"] += 1
    report_differences(path, text_differences(path.read_text(encoding="utf-8", errors="replace"), fresh), origin,
                       trace.problems)


def _compare_data(path: Path, shown, fresh, origin: str, trace: Trace) -> None:
    trace.counts["reports"] += 1
    report_differences(path, value_differences(shown, fresh), origin, trace.problems)


def _read_record(path: Path, trace: Trace) -> tuple[dict, Where] | None:
    """A report's JSON record and where the paths it spells are now."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        return record, where(path.parent, path, record["manifest"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        trace.problems.append(f"{path}: unreadable ({' '.join(str(exc).split())}): re-make the reports")
        return None


def _stated_record(stated, side: Path, trace: Trace) -> tuple[dict, Where, dict, dict] | None:
    """A report's JSON record, where its paths are now, and the config record and config it states
    (None where the record is absent or unreadable, or the config is missing: said elsewhere)."""
    settings = _settings(stated, side)
    if not side.is_file() or settings is None or (read := _read_record(side, trace)) is None:
        return None
    return (*read, *settings)


def _run_files(rows, located: Where, report: Path, trace: Trace) -> dict | None:
    """``[key..., path]`` rows as ``{key: path now}``; None (and a problem) when one is not vouched
    for by a manifest."""
    files = {key: located(path) for key, path in keyed(rows or []).items()}
    unvouched = [str(p) for p in files.values() if p.resolve() not in trace.vouched]
    if unvouched:
        trace.problems.append(f"{report}: made from {', '.join(unvouched)}, which no manifest vouches for (missing, "
                              "changed since, or never recorded): its numbers cannot be traced")
        return None
    return files


def _check_outputs(record: dict, located: Where, side: Path, trace: Trace) -> None:
    """The images (and reports) a figure record stamps still have their SHA-256."""
    from lsrbench.report.figures.data import file_stamp

    for recorded, stamp in (record.get("outputs") or {}).items():
        path = located(recorded)
        if not path.is_file():
            trace.problems.append(f"{path}: missing (recorded in {side})")
        elif file_stamp(str(path)) != stamp:
            trace.problems.append(f"{path}: modified: SHA-256 differs from {side} (not the figure its data was "
                                  "recorded with: re-make it)")


def _chance(root: Path, stated, trace: Trace) -> None:
    """chance.json computed again from the evaluated data folders it names."""
    from lsrbench.report.tables.chance import chance_record

    side = root / "chance.json"
    if not side.is_file() or (read := _read_record(side, trace)) is None:
        return
    record, located = read
    sources = record.get("sources") or {}
    dirs = {key: str(located(path)) for key, path in keyed(sources.get("data_dirs") or []).items()}
    infos = {key: str(located(path)) for key, path in keyed(sources.get("infos") or []).items()}
    fresh = chance_record(dirs, infos, sources.get("measures") or {})
    _compare_data(side, record["datasets"], fresh["datasets"], _origin([*dirs.values()], record["config"]), trace)


def _table_beir(root: Path, stated, trace: Trace) -> None:
    from lsrbench.report.results import read_metrics  # raw: the table shows each seed's spread
    from lsrbench.report.tables.beir import table_beir_text

    md, metrics_csv = root / "table_beir.md", root / "metrics.csv"
    settings = _settings(stated, md)
    if not md.is_file() or settings is None:
        return
    record, config = settings
    s = report_settings(config)
    chance = root / "chance.json"
    fresh = table_beir_text(read_metrics(str(metrics_csv)), s["report_cfg"], s["backbones"], record,
                            json.loads(chance.read_text(encoding="utf-8")) if chance.is_file() else None)
    _compare_text(md, fresh, _origin([metrics_csv], record), trace)


def _norms(root: Path, stated, trace: Trace) -> None:
    from lsrbench.model.auto_k import head_statistics, probe_at_k1
    from lsrbench.report.config_record import read_probes
    from lsrbench.report.figures.data import norms_data
    from lsrbench.report.results import read_mean_metrics
    from lsrbench.report.tables.table1 import auto_k_values
    from lsrbench.report.tables.norms import norms_report_text

    md, side, metrics_csv = root / "norms.md", root / "norms.data.json", root / "metrics.csv"
    if (found := _stated_record(stated, side, trace)) is None:
        return
    record, located, config_rec, config = found
    _check_outputs(record, located, side, trace)
    files = _run_files(record["sources"].get("norm_files"), located, side, trace)
    probe_files = _run_files(record["sources"].get("probe_files"), located, side, trace)
    if files is None or probe_files is None:
        return
    probes = read_probes({b: str(p) for b, p in probe_files.items()})
    s, metrics = report_settings(config), read_mean_metrics(str(metrics_csv))
    origin = _origin([metrics_csv, *files.values(), *probe_files.values()], config_rec)
    if md.is_file() and md in stated:
        fresh = norms_report_text({b: str(p) for b, p in files.items()}, metrics, s["report_cfg"], s["backbones"],
                                  config.get("auto_k"), stated[md][0], probes)
        _compare_text(md, fresh, origin, trace)
    statistics = {b: head_statistics(json.loads(p.read_text(encoding="utf-8")), probe_at_k1(probes, b))
                  for b, p in files.items()}
    fresh_data = norms_data(statistics, metrics, s["report_cfg"], auto_k_values(statistics, config.get("auto_k")))
    _compare_data(side, record["data"], fresh_data, origin, trace)


def _claims(root: Path, stated, trace: Trace) -> None:
    from lsrbench.config.schema import with_defaults
    from lsrbench.report.claims.engine import evaluate_claims
    from lsrbench.report.claims.output import claims_texts, evidence_seeds, read_evidence

    md, side, metrics_csv = root / "claims.md", root / "claims.json", root / "metrics.csv"
    if (found := _stated_record(stated, side, trace)) is None:
        return
    record, located, config_rec, config = found
    sources = record.get("sources") or {}
    files = {name: _run_files(sources.get(name), located, side, trace)
             for name in ("perquery_files", "norm_files", "log_files", "probe_files")}
    if any(f is None for f in files.values()):
        return
    reference = located(sources["reference_file"]) if sources.get("reference_file") else None
    if reference is not None and not reference.is_file():
        trace.problems.append(f"{side}: its paper values cannot be traced: reference file {reference} not found")
        return
    s = report_settings(config)
    perquery, norms, logs, probes = ({k: str(p) for k, p in f.items()} for f in files.values())
    chance = located(sources["chance_json"]) if sources.get("chance_json") else None
    ev = read_evidence(str(metrics_csv), perquery, norms, logs, s["backbones"], s["report_cfg"],
                       str(reference) if reference else None, probes, str(chance) if chance else None)
    claims_cfg = with_defaults("claims", config.get("claims"))
    fresh_md, fresh_json = claims_texts(evaluate_claims(ev, claims_cfg), claims_cfg, config_rec, sources,
                                        record["manifest"], evidence_seeds(str(metrics_csv)), ev.chance)
    origin = _origin([metrics_csv, "the per-query, head-norm and training-log files it names"], config_rec)
    _compare_data(side, record, json.loads(fresh_json), origin, trace)
    if md.is_file():
        _compare_text(md, fresh_md, origin, trace)


def _tradeoff(root: Path, stated, trace: Trace) -> None:
    from lsrbench.report.figures.data import tradeoff_data
    from lsrbench.report.results import read_mean_metrics

    side, metrics_csv = root / "tradeoff.data.json", root / "metrics.csv"
    if (found := _stated_record(stated, side, trace)) is None:
        return
    record, located, config_rec, config = found
    _check_outputs(record, located, side, trace)
    s = report_settings(config)
    from lsrbench.report.tables.chance import read_chance

    chance_json = root / "chance.json"
    chance = read_chance(str(chance_json)) if chance_json.is_file() else None
    _compare_data(side, record["data"], tradeoff_data(read_mean_metrics(str(metrics_csv)), s["report_cfg"], s["backbones"],
                                                      chance), _origin([metrics_csv, chance_json], config_rec), trace)


def _loss_curves(root: Path, stated, trace: Trace) -> None:
    from lsrbench.report.figures.data import loss_data
    from lsrbench.report.figures.plots import loss_runs
    from lsrbench.report.seeds import read_mean_train_logs

    side = root / "loss_curves.data.json"
    if (found := _stated_record(stated, side, trace)) is None:
        return
    record, located, config_rec, config = found
    _check_outputs(record, located, side, trace)
    files = _run_files(record["sources"].get("log_files"), located, side, trace)
    if files is None:
        return
    fresh = loss_data(loss_runs(read_mean_train_logs({key: str(p) for key, p in files.items()})), report_settings(config)["backbones"],
                      config["recipe"]["batch_size"])
    _compare_data(side, record["data"], fresh, _origin(["the training logs it names"], config_rec), trace)


def _html_pages(root: Path, trace: Trace) -> None:
    """Every HTML page of a Markdown report is the page of that report as it is now."""
    from lsrbench.report.render import report_page

    for page in sorted((root / "html").glob("*.html")):
        md = root / f"{page.stem}.md"
        if not md.is_file():
            trace.problems.append(f"{page}: its Markdown report {md} is missing")
        elif page.read_text(encoding="utf-8", errors="replace") != report_page(md.read_text(encoding="utf-8"), md.stem):
            target = page.relative_to(root.parent) if root.parent != root else page
            trace.problems.append(f"{page}: not the page of {md} as it is now (stale or edited): snakemake --cores 1 "
                                  f"{target} makes it again, after {md.name} where that no longer has the bytes its "
                                  "manifest records (made again from its run files, never from the edited text)")
