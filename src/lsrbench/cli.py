"""Command line: ``lsrbench check-config``, ``norm``, ``verify`` and ``prefetch``; the DAG itself runs through Snakemake."""

from __future__ import annotations

import argparse
import json
import sys

from lsrbench.errors import InputError


def _check_config(args) -> int:
    from lsrbench.pipeline.config import load_yaml, runs
    from lsrbench.pipeline.validate import check_config
    from lsrbench.pipeline.validate_files import unchecked_inputs

    config = check_config(load_yaml(args.configfile), args.configfile)
    grid = runs(config)
    print(f"{args.configfile}: ok: {len(config['backbones'])} backbones, {len(grid)} (backbone, k) runs, "
          f"datasets {', '.join(config['evaluation']['datasets'])}")
    for note in unchecked_inputs(config, args.configfile):
        print(f"{args.configfile}: not checked on this machine: {note}")
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
    from lsrbench.pipeline.config import load_yaml
    from lsrbench.pipeline.prefetch import prefetch
    from lsrbench.pipeline.validate import check_config

    # files=False: the mirror is what prefetch writes (a broken copy there is fetched again with --force)
    config = check_config(load_yaml(args.configfile), args.configfile, files=False)
    records = prefetch(config, args.configfile, args.mirror, force=args.force)
    print(f"{args.mirror}: {len(records)} items; run with --config mirror={args.mirror} and HF_HUB_OFFLINE=1")
    return 0


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
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InputError as exc:
        print(f"lsrbench: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
