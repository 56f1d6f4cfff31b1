"""The one bridge from a Snakemake ``script:`` (``workflow/scripts/stage.py``) to a stage function of
:mod:`lsrbench.pipeline.stages` or :mod:`lsrbench.pipeline.report_stages`: maps the rule's named
inputs, outputs and params onto the function's arguments, turns bad input into one line on
stderr, and writes an addressed output's ``params.json`` (its ``identity`` param: what the id in
its path stands for, :mod:`lsrbench.pipeline.paths`) once the stage has succeeded."""

from __future__ import annotations

import logging
import os
import sys

from lsrbench.errors import InputError
from lsrbench.pipeline import report_stages, stages
from lsrbench.provenance import write_json


def run(snakemake) -> None:
    # Before torch is imported: a job uses the cores Snakemake gave it, no more.
    threads = str(max(1, int(getattr(snakemake, "threads", 1) or 1)))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = threads
    # Also before torch: the GPUs this job requested (resources gpu=N), its own among the
    # machine's (Snakemake only counts them); SLURM's assignment is kept.
    from lsrbench.pipeline.gpus import claim_gpus

    claim_gpus(int(getattr(getattr(snakemake, "resources", None), "gpu", 0) or 0))
    stage = snakemake.params.stage
    kwargs = dict(snakemake.params.kwargs)
    # params.runtime (optional): settings that change how a job runs, never what it computes
    # (e.g. checkpoint frequency). A rule computes it with a function of ``output``, which makes it
    # a derived param: Snakemake leaves it out of its params rerun trigger.
    kwargs.update(dict(getattr(snakemake.params, "runtime", None) or {}))
    outputs = dict(snakemake.output.items())
    params_json = outputs.pop("params_json", None)
    for source in (dict(snakemake.input.items()), outputs):
        kwargs.update({name: (value if isinstance(value, str) else list(value)) for name, value in source.items()})
    if snakemake.log:
        logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True)
    try:
        function = getattr(stages, stage, None) or getattr(report_stages, stage)
        function(**kwargs)
    except InputError as exc:
        print(f"lsrbench: error: {exc}", file=sys.stderr)
        sys.exit(1)
    if params_json:
        write_json(params_json, dict(snakemake.params.identity))
