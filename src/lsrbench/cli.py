"""The lsrbench command line. The DAG runs through Snakemake (or ``lsrbench run``); the subcommands check,
probe, inspect, verify, prefetch, plan, cross-check and gc."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lsrbench.cli_errors import OneLineParser, check_snakemake_config, cores_argument, path_argument, require_extra, run_one_line
from lsrbench.cli_options import (add_config_options, add_mirror_option, add_results_option, command_line_config,
                                  config_files, config_pairs, load_config, results_folder, workdir_of)
from lsrbench.cli_targets import check_targets, row_targets_of
from lsrbench.errors import InputError
from lsrbench.snakemake_env import snakemake_env

DESCRIPTION = """\
lsrbench: a reproducibility harness for "Rescaling MLM-Head for Neural Sparse Retrieval"
(SPLADE with the MLM head divided by k before training). The experiment is a Snakemake DAG:

  snakemake --cores 2                      every report of the tiny default (config/config.yaml)
  snakemake --cores 2 results/table1.md    Table 1 only (targets go before --configfile/--config)
  lsrbench run results/table1.md --configfile my.yaml     the same, in any argument order
"""

EPILOG = """\
examples:
  lsrbench check-config --configfile my.yaml      validate a config and print its run grid
  lsrbench probe --configfile my.yaml             each backbone at step 0, k recommended (no training)
  lsrbench verify --results results               re-hash every artifact, trace every table cell
  lsrbench expected --results results             every Table 1 number and claim against its expected value
  lsrbench prefetch --configfile config/paper.yaml --mirror /data/mirror
  lsrbench mteb-check splade-tiny/k1 vaswani      score a run through mteb, compare with ours
  lsrbench gc [--delete]                          list (remove) outputs no current config refers to
  lsrbench cells --configfile config/paper.yaml   one command per Table 1 row and claim, expected value, cost
  lsrbench plan --configfile config/paper.yaml    jobs, dataset sizes and compute before submitting
  lsrbench preflight --configfile config/paper.yaml   GPU, driver, memory, disk, backbones, datasets: ready?
  lsrbench status --configfile config/paper.yaml  running jobs, done/total per rule, ETA (local or SLURM)

Bad input is one line: lsrbench: error: <file>: <field>: <message>. Documentation: README.md, docs/.
"""


def _check_config(args) -> int:
    from lsrbench.config.grid import grid_lines, runs, several_seeds, training_seeds
    from lsrbench.validation.files import input_checks

    files = config_files(args)
    config, read = load_config(files, command_line=command_line_config(args))
    grid = runs(config)
    on = f" (on {', '.join(f for f in read if f not in files)})" if len(read) > len(files) else ""
    seeds = training_seeds(config)
    each = f" x {len(seeds)} training seeds ({', '.join(map(str, seeds))})" if several_seeds(config) else ""
    print(f"{', '.join(files)}{on}: ok: {len(config['backbones'])} backbones, {len(grid)} runs{each}, "
          f"datasets {', '.join(config['evaluation']['datasets'])}")
    print("runs (backbone, rescale mode, k):")
    for line in grid_lines(config):
        print(f"  {line}")
    claims = (config.get("claims") or {}).get("list") or []
    if claims:
        print(f"claims ({len(claims)}): {', '.join(c['id'] for c in claims)}")
    for line in input_checks(config, files[-1]):
        print(line)
    return 0


def _probe(args) -> int:
    from lsrbench.ops.probe import run_probe

    command_line = command_line_config(args)
    config = load_config(config_files(args), command_line=command_line)[0]
    return run_probe(args.configfile, command_line, args.cores, config["backbones"], args.snakefile,
                     workdir_of(results_folder(args, "probe")), args.dry_run)


def _norm(args) -> int:
    from lsrbench.model.checkpoint import load_mlm
    from lsrbench.model.rescale import head_norms

    model = load_mlm(args.model, "command line", "--model", trust_remote_code=args.trust_remote_code)
    print(json.dumps(head_norms(model), indent=2))
    return 0


def _verify(args) -> int:
    from lsrbench.report.verify.manifests import verify
    from lsrbench.report.verify.versions import version_notes

    results = results_folder(args, "verify")
    problems, counts = verify(results)
    for line in problems:
        print(f"lsrbench: verify: {line}", file=sys.stderr)
    for line in version_notes(results):
        print(f"lsrbench: verify: note: {line}")
    summary = (f"{results}: {counts['manifests']} manifests, {counts['artifacts']} artifacts, "
               f"{counts['metric_rows']} metrics.csv rows, {counts.get('table_cells', 0)} table1.md cells checked, "
               f"{counts.get('reports', 0)} reports made again")
    if problems:
        print(f"{summary}: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"{summary}: ok")
    return 0


def _prefetch(args) -> int:
    from lsrbench.ops.prefetch import prefetch

    files = config_files(args)
    command_line = command_line_config(args)
    # the mirror is the folder prefetch writes, not one the config reads (a broken copy is fetched again with --force)
    command_line.pop("mirror")
    config = load_config(files, check_files=False, command_line=command_line)[0]
    if args.dry_run:
        from lsrbench.validation.mirror import missing

        records = missing(config, args.mirror)
        for r in records:
            print(f"{r['kind']} {r.get('backbone') or r.get('name')}: {r['status']} ({r['path']})")
        gaps = sum(r["status"] == "missing" for r in records)
        print(f"{args.mirror}: {gaps} of {len(records)} items missing" + (": run without --dry-run" if gaps else ""))
        return 1 if gaps else 0
    records = prefetch(config, files[-1], args.mirror, force=args.force)
    print(f"{args.mirror}: {len(records)} items; run with --config mirror={args.mirror} and HF_HUB_OFFLINE=1")
    return 0


def _plan(args) -> int:
    import contextlib
    import logging
    import os

    # stdout is the plan: the calibration's progress bars off, its messages to stderr
    os.environ.setdefault("TQDM_DISABLE", "1")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="lsrbench plan: %(message)s")
    logging.getLogger("lsrbench.ops.plan").setLevel(logging.INFO)
    from lsrbench.ops.plan import make_plan, plan_text

    files = config_files(args)
    command_line = command_line_config(args)
    config = load_config(files, command_line=command_line)[0]
    with contextlib.redirect_stdout(sys.stderr):
        plan = make_plan(config, files, command_line=command_line, snakefile=args.snakefile,
                         workdir=workdir_of(results_folder(args, "plan")),
                         remaining=args.remaining, calibrate_models=not args.no_calibration, steps=args.train_steps,
                         passages=args.passages, batch=args.train_batch, assume_flops=args.flops,
                         threads=args.threads, records=args.records, gpu=args.gpu, gpus=args.gpus)
    print(plan_text(plan), end="")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(plan, fh, indent=1)
    return 0


def snakemake_command(args) -> list[str]:
    """The snakemake arguments ``lsrbench run`` stands for: targets first, so that no option
    taking several values (--configfile, --config, --resources) swallows one."""
    cmd = [*args.targets]
    if args.report:
        cmd += ["--report", args.report]
    if args.cores or not args.profile:
        cmd += ["--cores", args.cores or ("1" if args.report else "all")]
    if args.profile:
        cmd += ["--profile", args.profile]
    if args.dry_run:
        cmd.append("--dry-run")
    if args.gpus is not None:
        cmd += ["--resources", f"gpu={args.gpus}"]
    if args.configfile:
        cmd += ["--configfile", *args.configfile]
    command_line = command_line_config(args)
    if command_line:
        cmd += ["--config", *config_pairs(command_line)]
    return cmd + list(args.snakemake_args)


def _run(args) -> int:
    import shlex
    import subprocess

    if not Path("Snakefile").is_file():
        raise InputError(Path.cwd(), None, "no Snakefile here: run lsrbench run from the lsrbench checkout")
    check_snakemake_config(args.configfile or [], list(args.snakemake_args))
    files, command_line = config_files(args), command_line_config(args)
    check_targets(args.targets, load_config(files, check_files=False, command_line=command_line)[0], files)
    if args.row:
        args.targets = [*args.targets, *row_targets_of(args.row, files, command_line)]
    cmd = snakemake_command(args)
    print("$ snakemake " + shlex.join(cmd), file=sys.stderr)
    proc = subprocess.Popen([sys.executable, "-m", "snakemake", *cmd], env=snakemake_env(cmd))
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:  # snakemake got the same Ctrl-C: it stops its jobs and says so; its status answers
            continue


def _mteb_check(args) -> int:
    from lsrbench.cli_mteb import mteb_check

    config = load_config(config_files(args), check_files=False, command_line=command_line_config(args))[0]
    return mteb_check(args, config, config_files(args)[-1])


def _status(args) -> int:
    from lsrbench.ops.status import show_status

    return show_status(config_files(args), command_line_config(args), workdir_of(results_folder(args, "status")), args.plan, args.watch)


def _export_mteb(args) -> int:
    from lsrbench.cli_mteb import export_mteb

    return export_mteb(args)


class _VersionAction(argparse.Action):
    """``--version``: lsrbench and the libraries that decide its numbers, against requirements.lock
    (:func:`lsrbench.environment.version_lines`)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="print lsrbench's version and its libraries' against "
                                                             "requirements.lock, then exit")

    def __call__(self, parser, namespace, values, option_string=None):
        from lsrbench.environment import version_lines

        print("\n".join(version_lines()))
        parser.exit()


def _add_run_parser(parser, sub) -> None:
    p = sub.add_parser("run", help="run the DAG: snakemake with the targets first",
                       description="Build the snakemake command for the given targets and options (targets first, "
                                   "whatever order they are given in), print it, and run it.")
    p.add_argument("targets", nargs="*", metavar="TARGET", help="files to build (default: every report)")
    p.add_argument("--row", action="append", metavar="RUN/kK",
                   help="build Table 1's row RUN at k K (e.g. splade-tiny/k1, or BM25) and nothing else: its runs' "
                        "evaluation files as this config and mirror address them; repeat it for several rows")
    add_config_options(p)
    add_mirror_option(p)
    p.add_argument("--cores", metavar="N", type=cores_argument, help="cores for snakemake (default: all; 1 for --report)")
    p.add_argument("--gpus", type=int, metavar="N", help="GPUs train/index jobs may use at once (--resources gpu=N)")
    p.add_argument("--profile", metavar="DIR", help="a snakemake profile, e.g. profiles/local or profiles/slurm")
    p.add_argument("-n", "--dry-run", action="store_true", help="list the jobs without running them")
    p.add_argument("--report", metavar="FILE", help="write the HTML report of the finished run instead")
    p.epilog = "Anything after -- goes to snakemake as it is."
    p.set_defaults(func=_run, snakemake_args=[])
    parser.run_parser = p


def _add_plan_parser(sub) -> None:
    from lsrbench.ops.plan import DEFAULT_FLOPS, default_records

    p = sub.add_parser("plan", help="jobs per rule, dataset sizes and compute of a grid, before it is submitted",
                       description="Count the grid's jobs per rule (Snakemake's dry run), the sizes of its datasets, "
                                   "and estimate its compute per stage (train and index device-hours, evaluate "
                                   "CPU-hours) from a short calibration of each backbone on this machine "
                                   "(docs/cluster.md).")
    add_config_options(p)
    add_mirror_option(p)
    p.add_argument("--snakefile", help="the Snakefile (default: ./Snakefile, else the installed checkout's)")
    add_results_option(p, directory_alias=True)
    p.add_argument("--remaining", action="store_true", help="only the jobs not finished there (default: the whole grid)")
    p.add_argument("--no-calibration", action="store_true", help="job counts and sizes only")
    p.add_argument("--train-steps", type=int, default=3, help="training steps timed per backbone (the first is warm-up; at least 5: their spread "
                   "tells a disturbed calibration)")
    p.add_argument("--passages", type=int, default=256, help="passages encoded and searched per backbone")
    p.add_argument("--train-batch", type=int, help="triplets per timed step (default: the recipe's)")
    p.add_argument("--threads", type=int, help="torch threads of the timing: a job's (default: 1, as local jobs get)")
    p.add_argument("--flops", type=float, default=DEFAULT_FLOPS, help="FLOPs of a trained run assumed for evaluate")
    p.add_argument("--records", metavar="DIR", default=default_records(), help="calibration records of the bill "
                   "(real_size_smoke.json, gpu-cuda.json, peers-1m.json; default: the checkout's benchmark/results)")
    p.add_argument("--gpu", choices=["H100", "H200"], default="H100", help="the GPU whose datasheet peak the bill uses")
    p.add_argument("--gpus", type=int, default=8, help="GPUs the grid runs on, for the days of the total line (default: 8, one node)")
    p.add_argument("--json", metavar="FILE", help="also write the plan as JSON to this file")
    p.set_defaults(func=_plan)


def _add_mteb_parsers(sub) -> None:
    from lsrbench.evaluate.mteb_check import TOLERANCE  # the module imports mteb only when it runs

    p = sub.add_parser("mteb-check", help="score a finished run through mteb and compare with lsrbench's metrics",
                       description="Score RUN's trained model on DATASET's evaluated folder "
                       "(results/data/<dataset>/<id>/pool<depth>/eval, or .../<id>/full without pooling) through mteb, offline, and compare every measure both compute "
                       "with RUN's metrics.tsv. Writes <run>/<dataset>/mteb_check.json; exit status 1 if a measure "
                       "differs by more than the tolerance. Needs pip install -e '.[mteb]'.")
    p.add_argument("run", metavar="RUN", help="the run folder under results/runs, e.g. splade-tiny/k1 (or a path)")
    p.add_argument("dataset", metavar="DATASET", help="an evaluated dataset of the run, e.g. vaswani")
    add_config_options(p)
    add_results_option(p)
    p.add_argument("--tolerance", type=float, default=TOLERANCE,
                   help=f"largest accepted difference (default: {TOLERANCE:g}; mteb rounds to 5 decimals)")
    p.add_argument("--mteb-results", metavar="DIR", help="also file mteb's own result there (MTEB's layout)")
    p.set_defaults(func=_mteb_check, extra="mteb")

    p = sub.add_parser("export-mteb", help="write every run's metrics in MTEB's result format",
                       description="Write each (run, dataset) of metrics.csv as an MTEB result (mteb's ResultCache "
                                   "layout; NanoBEIR datasets under MTEB's own task names), to compare with "
                                   "published MTEB / NanoBEIR results. Needs pip install -e '.[mteb]'.")
    p.add_argument("out", metavar="OUT", help="the results root to write into")
    add_results_option(p)
    p.set_defaults(func=_export_mteb, extra="mteb")


def build_parser() -> argparse.ArgumentParser:
    from lsrbench.ops.probe import add_probe_arguments

    parser = OneLineParser(prog="lsrbench", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("check-config", help="validate a run config and print its run grid",
                       description="Validate a run config (schema, cross-references, files it names) and print "
                                   "one line per (backbone, rescale mode) with its k values.")
    add_config_options(p)
    p.add_argument("legacy_configfile", nargs="?", metavar="FILE", help=argparse.SUPPRESS)
    add_mirror_option(p, "check the models and data of this mirror folder (--config mirror=DIR)")
    p.set_defaults(func=_check_config)

    _add_run_parser(parser, sub)

    p = sub.add_parser("probe", help="probe every backbone at step 0 (no training) and print the table",
                       description="Run only the step-0 probe of every backbone (snakemake results/probe.md: "
                                   "activations, scores, losses and gradients before any optimiser step, per k) and "
                                   "print it with the recommended k per backbone (docs/probe.md).")
    add_config_options(p)
    add_probe_arguments(p)
    p.set_defaults(func=_probe)

    p = sub.add_parser("verify", help="re-hash every artifact and trace every number to a manifest",
                       description="Re-hash every artifact named in the run manifests, check every row of "
                                   "metrics.csv against its run's metrics.tsv and every cell of table1.md against "
                                   "table1.cells.json, check that every report comes from one config, and make "
                                   "the other reports (table_beir.md, norms.md, claims.md/json, the figures' data, "
                                   "the HTML pages) again from their run files to compare. The folder may be "
                                   "anywhere and named anything. Exit status 1 with one line per problem.")
    add_results_option(p, positional_alias=True)
    p.set_defaults(func=_verify)

    p = sub.add_parser("norm", help="print the MLM head norms of a checkpoint",
                       description="Load a *ForMaskedLM checkpoint and print its MLM head norms as JSON "
                                   "(Frobenius, mean and max row norm, bias norm, sizes, tied).")
    p.add_argument("--model", required=True, help="hub id or folder of a *ForMaskedLM checkpoint")
    p.add_argument("--trust-remote-code", action="store_true", help="allow the checkpoint's own model code")
    p.set_defaults(func=_norm)

    p = sub.add_parser("prefetch", help="download a config's models and datasets into a mirror folder",
                       description="Fetch every model and dataset a config needs into DIR "
                       "(<DIR>/models, <DIR>/data), for machines without internet: then run with "
                       "--config mirror=DIR and HF_HUB_OFFLINE=1.")
    add_config_options(p)
    p.add_argument("--mirror", required=True, metavar="DIR", type=path_argument("--mirror"), help="the mirror folder (written)")
    p.add_argument("--force", action="store_true", help="fetch again what the mirror already has")
    p.add_argument("--dry-run", action="store_true", help="download nothing: list what the mirror lacks (exit 1 if any)")
    p.set_defaults(func=_prefetch)

    _add_plan_parser(sub)
    from lsrbench.cli_expected import add_expected_parsers

    add_expected_parsers(sub, add_config_options)
    _add_mteb_parsers(sub)
    from lsrbench.cli_gc import add_gc_parser
    from lsrbench.cli_preflight import add_preflight_parser

    add_gc_parser(sub)
    add_preflight_parser(sub)
    from lsrbench.ops.status import add_status_arguments

    add_status_arguments(p := sub.add_parser("status", help="running jobs, done/total per rule and an ETA of a grid"))
    add_config_options(p)
    p.set_defaults(func=_status)
    return parser


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    if argv[:1] != ["run"]:
        return parser.parse_args(argv)
    rest, extra = (argv[1:], []) if "--" not in argv else (argv[1:argv.index("--")], argv[argv.index("--") + 1:])
    args = parser.run_parser.parse_intermixed_args(rest)
    args.command, args.snakemake_args = "run", extra
    # --config takes several values: what follows it without a '=' is a target (any order, as promised)
    args.targets += [value for value in args.config if "=" not in value]
    args.config = [value for value in args.config if "=" in value]
    return args


def main(argv: list[str] | None = None) -> int:
    return run_one_line(lambda: _main(list(sys.argv[1:] if argv is None else argv)))


def _main(argv: list[str]) -> int:
    args = _parse(parser := build_parser(), argv)
    if args.command is None:
        parser.print_help()
        return 2
    getattr(args, "extra", None) and require_extra(args.extra, args.extra, args.command)  # before any work
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
