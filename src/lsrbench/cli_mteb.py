"""The mteb commands: ``mteb-check`` and ``export-mteb``; apart from cli.py for its size."""

from __future__ import annotations

import json
from pathlib import Path

from lsrbench.errors import InputError

__all__ = ["mteb_check", "mteb_paths", "export_mteb", "by_lengths"]


def mteb_check(args, config: dict, config_file: str) -> int:
    """``lsrbench mteb-check RUN DATASET``: the run's model scored through mteb beside its metrics.tsv."""
    from lsrbench.atomic import atomic_open
    from lsrbench.config.entries import dataset_entry
    from lsrbench.evaluate.mteb_check import check_run, summary_line

    if args.dataset not in config["_datasets"]:
        raise InputError(config_file, "evaluation.datasets", f"dataset '{args.dataset}' is not defined")
    entry = dataset_entry(config, args.dataset)
    run_dir, data_dir, metrics_tsv = mteb_paths(args, config, config_file)
    if not (run_dir / "model").is_dir():
        raise InputError(run_dir, None, "not a finished run (no model/ folder): give <run>/k<k>, e.g. splade-tiny/k1")
    # the lengths metrics.tsv was computed at (the index stage's), not those saved with the model
    lengths = {"query_length": config["evaluation"]["query_max_length"],
               "document_length": config["evaluation"]["document_max_length"]}
    report = check_run(run_dir, args.dataset, data_dir, tol=args.tolerance, metrics_tsv=metrics_tsv,
                       ignore_identical_ids=entry.skip_identical_ids, results_root=args.mteb_results, **lengths)
    out = metrics_tsv.parent / "mteb_check.json"
    with atomic_open(out, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1)
        fh.write("\n")
    used, saved = report["encode_lengths"], report["model_saved_lengths"]
    print(f"mteb encodes at the evaluation's lengths, {used['query_length']} query / {used['document_length']} "
          f"document tokens (evaluation.query_max_length / document_max_length), as lsrbench's index stage did; "
          f"the model folder saves its training lengths ({saved['query_length']} / {saved['document_length']})")
    for row in report["rows"]:
        verdict = "ok" if row["ok"] else "DIFFERS"
        print(f"{row['measure']:>12}  lsrbench {row['lsrbench']:.5f}  mteb {row['mteb']:.5f}  "
              f"diff {row['diff']:+.5f}  {verdict}")
    print(summary_line(report, f"{run_dir} on {args.dataset}") + f"; {out}")
    return 0 if report["ok"] else 1


def mteb_paths(args, config: dict, config_file: str) -> tuple[Path, Path, Path]:
    """The trained model's folder, the evaluated data and the run's metrics.tsv, from a run folder path or from
    ``<run>/k<k>`` of the config's outputs."""
    from lsrbench.config.grid import several_seeds
    from lsrbench.dag.evaluated import eval_dir
    from lsrbench.dag.layout import Layout
    from lsrbench.stages import all_stages

    from lsrbench.cli_options import results_folder

    results = Path(results_folder(args, "mteb-check"))
    given = Path(args.run) if Path(args.run).is_dir() else results / "runs" / args.run
    if (given / "model").is_dir():
        return given, results / "data" / args.dataset / "eval", given / args.dataset / "metrics.tsv"
    # several training seeds: <run>/k<k>/seed<s> (run keys: lsrbench.config.grid.run_keys)
    name, _, seed = args.run.rpartition("/seed") if several_seeds(config) else (args.run, "", None)
    run, _, k = name.rpartition("/k")
    key = {"run": run, "k": k, **({"seed": seed} if seed is not None else {})}
    layout = Layout(config, str(results), stages=all_stages())
    if key not in [{f: str(v) for f, v in i.fields.items() if f in key} for i in layout.all() if i.kind == "train"]:
        example = "splade-tiny/k1" + ("/seed0" if seed is not None else "")
        raise InputError(config_file, "backbones", f"'{args.run}' is not a run of this config "
                                                               f"(give <run>/k<k>{'/seed<s>' if seed is not None else ''}, "
                                                               f"e.g. {example})")
    return (Path(layout.get("train", **key).folder), Path(eval_dir(layout, args.dataset)),
            Path(layout.get("evaluate", **key, dataset=args.dataset).path("metrics.tsv")))


def export_mteb(args) -> int:
    """``lsrbench export-mteb OUT``: every run's metrics in MTEB's result layout, and the lengths they were computed at."""
    from lsrbench.cli_options import results_folder
    from lsrbench.report.mteb_results import evaluated_lengths, export_mteb_results

    results = results_folder(args, "export-mteb")
    written = export_mteb_results(results, args.out)
    print(f"{args.out}: {len(written)} MTEB result files (mteb's ResultCache layout)")
    for (query, document), runs in sorted(by_lengths(evaluated_lengths(results)).items()):
        print(f"{len(runs)} results of trained runs were computed with texts cut at {query} query / {document} document "
              "tokens (evaluation.query_max_length / document_max_length, at most a backbone's positions; max_tokens in "
              "model_meta.json). A run's model/ saves its training lengths: to score it as these results do, set "
              f"model[0].query_length = {query} and model[0].document_length = {document} after SparseEncoder(path) "
              "(lsrbench mteb-check does)")
    return 0


def by_lengths(lengths: dict) -> dict[tuple[int, int], list]:
    grouped: dict[tuple[int, int], list] = {}
    for key, value in lengths.items():
        grouped.setdefault(value, []).append(key)
    return grouped
