"""Command line: ``lsrbench check-config``, ``norm``, ``verify``, ``prefetch`` and ``plan``; the DAG itself runs through Snakemake."""

from __future__ import annotations

import argparse
import json
import sys

from lsrbench.errors import InputError


def _check_config(args) -> int:
    from lsrbench.pipeline.config import check_config, load_yaml, runs

    config = check_config(load_yaml(args.configfile), args.configfile)
    grid = runs(config)
    print(f"{args.configfile}: ok: {len(config['backbones'])} backbones, {len(grid)} (backbone, k) runs, "
          f"datasets {', '.join(config['evaluation']['datasets'])}")
    return 0


def _norm(args) -> int:
    from lsrbench.model.checkpoint import load_mlm
    from lsrbench.model.rescale import head_norms

    model = load_mlm(args.model, "command line", "--model", trust_remote_code=args.trust_remote_code)
    print(json.dumps(head_norms(model), indent=2))
    return 0


def _verify(args) -> int:
    from lsrbench.report.verify import verify

    problems, counts = verify(args.results)
    for line in problems:
        print(f"lsrbench: verify: {line}", file=sys.stderr)
    summary = (f"{args.results}: {counts['manifests']} manifests, {counts['artifacts']} artifacts, "
               f"{counts['metric_rows']} metrics.csv rows, {counts.get('table_cells', 0)} table1.md cells checked")
    if problems:
        print(f"{summary}: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"{summary}: ok")
    return 0


def _prefetch(args) -> int:
    from lsrbench.pipeline.config import check_config, load_yaml
    from lsrbench.pipeline.prefetch import prefetch

    config = check_config(load_yaml(args.configfile), args.configfile)
    records = prefetch(config, args.configfile, args.mirror, force=args.force)
    print(f"{args.mirror}: {len(records)} items; run with --config mirror={args.mirror} and HF_HUB_OFFLINE=1")
    return 0


def _plan(args) -> int:
    import contextlib
    import json
    import logging
    import os

    # stdout is the plan: the calibration's progress bars off, its messages to stderr
    os.environ.setdefault("TQDM_DISABLE", "1")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="lsrbench plan: %(message)s")
    logging.getLogger("lsrbench.pipeline.plan").setLevel(logging.INFO)
    from lsrbench.pipeline.plan import make_plan, plan_text

    with contextlib.redirect_stdout(sys.stderr):
        plan = make_plan(args.configfile, mirror=args.mirror, snakefile=args.snakefile, workdir=args.directory,
                         remaining=args.remaining, calibrate_models=not args.no_calibration, steps=args.train_steps,
                         passages=args.passages, batch=args.train_batch, assume_flops=args.flops)
    print(plan_text(plan), end="")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(plan, fh, indent=1)
    return 0


def _add_plan(sub) -> None:
    from lsrbench.pipeline.plan import DEFAULT_FLOPS

    p = sub.add_parser("plan", help="job counts per rule, dataset sizes and the compute of a config's grid, "
                                    "calibrated on this device, before it is submitted")
    p.add_argument("--configfile", default="config/config.yaml")
    p.add_argument("--mirror", help="a mirror folder (as --config mirror=DIR): models and data found there")
    p.add_argument("--snakefile", help="the Snakefile (default: ./Snakefile, else the installed checkout's)")
    p.add_argument("-d", "--directory", default=".", help="the working directory the grid runs in (default .)")
    p.add_argument("--remaining", action="store_true", help="only the jobs not finished there (default: the whole grid)")
    p.add_argument("--no-calibration", action="store_true", help="job counts and sizes only")
    p.add_argument("--train-steps", type=int, default=3, help="training steps timed per backbone (the first is warm-up)")
    p.add_argument("--passages", type=int, default=256, help="passages encoded and searched per backbone")
    p.add_argument("--train-batch", type=int, help="triplets per timed step (default: the recipe's on a GPU, 4 on a CPU)")
    p.add_argument("--flops", type=float, default=DEFAULT_FLOPS, help="FLOPs of a trained run assumed for evaluate")
    p.add_argument("--json", help="also write the plan as JSON to this file")
    p.set_defaults(func=_plan)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lsrbench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("check-config", help="validate a run config and list its grid")
    p.add_argument("configfile", nargs="?", default="config/config.yaml")
    p.set_defaults(func=_check_config)
    p = sub.add_parser("norm", help="print the MLM head norms of a checkpoint")
    p.add_argument("--model", required=True, help="hub id or folder of a *ForMaskedLM checkpoint")
    p.add_argument("--trust-remote-code", action="store_true")
    p.set_defaults(func=_norm)
    p = sub.add_parser("verify", help="re-hash every artifact named in the run manifests and trace every "
                                      "number of metrics.csv and table1.md to a manifest-backed run file")
    p.add_argument("results", nargs="?", default="results")
    p.set_defaults(func=_verify)
    p = sub.add_parser("prefetch", help="download every model and dataset of a config into a mirror folder "
                                        "(then run with --config mirror=DIR and HF_HUB_OFFLINE=1)")
    p.add_argument("--configfile", default="config/config.yaml")
    p.add_argument("--mirror", required=True, help="the mirror folder (<mirror>/models, <mirror>/data)")
    p.add_argument("--force", action="store_true", help="fetch again what the mirror already has")
    p.set_defaults(func=_prefetch)
    _add_plan(sub)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InputError as exc:
        print(f"lsrbench: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
