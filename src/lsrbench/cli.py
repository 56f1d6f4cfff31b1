"""Command line: ``lsrbench check-config`` and ``lsrbench norm``; the DAG itself runs through Snakemake."""

from __future__ import annotations

import argparse
import json
import sys

from .errors import InputError


def _check_config(args) -> int:
    from .config import check_config, load_yaml, runs

    config = check_config(load_yaml(args.configfile), args.configfile)
    grid = runs(config)
    print(f"{args.configfile}: ok: {len(config['backbones'])} backbones, {len(grid)} (backbone, k) runs, "
          f"datasets {', '.join(config['evaluation']['datasets'])}")
    return 0


def _norm(args) -> int:
    from .models import load_mlm
    from .norms import head_norms

    model = load_mlm(args.model, "command line", "--model", trust_remote_code=args.trust_remote_code)
    print(json.dumps(head_norms(model), indent=2))
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
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InputError as exc:
        print(f"lsrbench: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
