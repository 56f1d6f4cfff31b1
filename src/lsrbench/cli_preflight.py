"""``lsrbench preflight`` (:mod:`lsrbench.ops.preflight`); apart from cli.py for its size."""

from __future__ import annotations

import sys

from lsrbench.cli_options import (add_config_options, add_results_option, command_line_config, config_files, load_config,
                                  results_folder, workdir_of)

__all__ = ["add_preflight_parser"]


def _preflight(args) -> int:
    import logging

    from lsrbench.ops.preflight import preflight

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="lsrbench preflight: %(message)s")
    files = config_files(args)
    config = load_config(files, command_line=command_line_config(args))[0]
    problems, notes = preflight(config, files, workdir_of(results_folder(args, "preflight")), disk=not args.no_disk)
    for line in problems:
        print(f"lsrbench: error: {line}", file=sys.stderr)
    if problems:
        print(f"{', '.join(files)}: preflight: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"{', '.join(files)}: preflight ok")
    for line in notes:
        print(f"  {line}")
    return 0


def add_preflight_parser(sub) -> None:
    p = sub.add_parser("preflight", help="check the GPU stack, memory, disk, backbones and datasets before a grid runs",
                       description="Before the first job of a grid (and as the first job of a use_gpu: true grid): "
                                   "a usable GPU and torch's CUDA build against the driver (the CUDA lock needs "
                                   "R580 or newer), one measured training step per backbone against the GPU's "
                                   "memory, free disk against lsrbench plan's estimate, every backbone at its "
                                   "pinned revision in the mirror, the hub cache or the hub, every dataset in the "
                                   "mirror or with its registry MD5. One line per problem and exit status 1; "
                                   "else a short summary.")
    add_config_options(p)
    add_results_option(p)
    p.add_argument("--no-disk", action="store_true", help="skip the disk check (it dry-runs the grid, seconds)")
    p.set_defaults(func=_preflight)
