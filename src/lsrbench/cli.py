"""Command line: ``lsrbench check-config``, ``norm``, ``verify``, ``prefetch`` and ``gc``; the DAG itself runs through Snakemake."""

from __future__ import annotations

import argparse
import json
import sys

from lsrbench.errors import InputError


def _check_config(args) -> int:
    from lsrbench.pipeline.config import check_config, check_mirror, load_yaml, runs

    config = check_config(load_yaml(args.configfile), args.configfile)
    check_mirror(config, args.configfile)
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


def _overrides(pairs: list[str]) -> dict:
    """``--config key=value`` as Snakemake reads it (an empty value is null)."""
    import yaml

    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError("--config", pair, "expected key=value")
        out[key] = yaml.safe_load(value) if value else None
    return out


def _gc(args) -> int:
    from lsrbench.pipeline.gc import current_folders, find_garbage, human, remove_garbage

    keep = current_folders(args.configfile, _overrides(args.config), args.results)
    garbage = find_garbage(args.results, keep)
    verb = "removed" if args.delete else "would remove"
    for item in garbage:
        print(f"{verb}: {item.path} ({human(item.bytes)})")
    if args.delete:
        remove_garbage(args.results, garbage)
    total = human(sum(item.bytes for item in garbage))
    print(f"{args.results}: {len(garbage)} folder(s) no config of {', '.join(args.configfile)} refers to, {total}"
          + ("" if args.delete or not garbage else "; run again with --delete to remove them"))
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
    p = sub.add_parser("gc", help="list (default) or remove (--delete) the outputs under the results folder that "
                                  "no given config refers to (other configs' runs, reverted edits)")
    p.add_argument("--configfile", nargs="+", default=["config/config.yaml"],
                   help="the current configs: their outputs are kept (default: config/config.yaml)")
    p.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE",
                   help="overrides on every config, as given to snakemake --config (e.g. mirror=../shared)")
    p.add_argument("--results", default="results", help="the results folder (run from the folder snakemake runs in)")
    p.add_argument("--delete", action="store_true", help="remove them (default: only list them)")
    p.set_defaults(func=_gc)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InputError as exc:
        print(f"lsrbench: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
