"""The job runner: from a Snakemake ``script:`` (``workflow/scripts/run_job.py``) to the job function the rule's
``stage`` or ``report`` param names (:func:`lsrbench.stages.stage`, its module imported alone;
:mod:`lsrbench.report.reports`), called with the rule's ``settings`` and ``runtime`` params, its named inputs
(report rules: their ``keyed`` run files) and outputs, by name (:mod:`lsrbench.dag.stage` binds them when the
Snakefile is parsed), turns bad input into one line on stderr, and a Ctrl-C into one line saying what was saved
and how to resume."""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

from lsrbench.errors import OneLineError, out_of_space_line
from lsrbench.pipeline.job_clock import ImportClock, process_age
from lsrbench.progress import format_duration, human_bytes, log_to_file
from lsrbench.provenance import addressed_record, report_manifest, write_json

log = logging.getLogger("lsrbench.job")


def run(snakemake) -> None:
    # Before torch is imported: a job uses the cores Snakemake gave it, no more.
    threads = str(max(1, int(getattr(snakemake, "threads", 1) or 1)))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = threads
    # Also before torch: the GPUs this job requested (resources gpu=N), its own among the
    # machine's (Snakemake only counts them); SLURM's assignment is kept.
    from lsrbench.pipeline.gpus import claim_gpus

    gpus = int(getattr(getattr(snakemake, "resources", None), "gpu", 0) or 0)
    claim_gpus(gpus)
    params = snakemake.params
    rule = getattr(params, "stage", None) or params.report  # a stage's name, or a report rule's
    kwargs = dict(getattr(params, "settings", None) or {})
    # params.runtime (optional): settings that change how a job runs, never what it computes (e.g. checkpoint
    # frequency).
    kwargs.update(dict(getattr(params, "runtime", None) or {}))
    outputs = dict(snakemake.output.items())
    params_json, manifest_json = outputs.pop("params_json", None), outputs.pop("manifest_json", None)
    # an input named with a leading "_" is read through another one (a config snapshot's params.json
    # beside its config.yaml): named for the DAG, no argument of the job
    named = {name: v for name, v in snakemake.input.items() if not name.startswith("_")}
    for source in (named, outputs):
        kwargs.update({name: (value if isinstance(value, str) or value is None else list(value))
                       for name, value in source.items()})
    kwargs.update(dict(getattr(params, "keyed", None) or {}))  # run files by key, not by position
    if snakemake.log:
        log_to_file(snakemake.log[0])
    try:  # a job that asked for a GPU gets one or stops here, before its job function loads a model
        from lsrbench.device import select_job_device

        # a GPU when the config asked for one (use_gpu) even where a profile gave the job none
        select_job_device(max(gpus, int(bool(getattr(params, "use_gpu", False)))), kwargs.get("config_file"))
    except OneLineError as exc:
        _fail(rule, str(exc))
    start, age = time.monotonic(), process_age()
    log.info("%s: started (%s threads)", rule, threads)
    try:
        with ImportClock() as imports:
            job_function(rule)(**kwargs)
    except OneLineError as exc:
        _fail(rule, str(exc))
    except OSError as exc:  # a full disk or quota: one line naming the folder the job was writing
        line = out_of_space_line(exc, _output_folder(list(snakemake.output)))
        if line is None:
            raise
        _fail(rule, line)
    except KeyboardInterrupt:  # Ctrl-C: Snakemake stops every job; each says what it keeps
        _fail(rule, f"{_output_folder(list(snakemake.output))}: {saved_progress(kwargs)}; run the same command "
                     "again to go on", kind="interrupted", status=130)
    inputs = list(snakemake.input)
    if params_json:
        write_json(params_json, addressed_record(dict(params.identity), inputs, outputs.values()))
    if manifest_json:
        from lsrbench.report.config_record import config_record

        # the job's call, which `lsrbench verify` runs again (lsrbench.report.verify.remake)
        call = {"settings": dict(getattr(params, "settings", None) or {}), "keyed": dict(getattr(params, "keyed", None) or {}),
                "inputs": {n: v if isinstance(v, str) else list(v) for n, v in named.items()}, "outputs": outputs}
        write_json(manifest_json, {**report_manifest(manifest_json, snakemake.rule, config_record(kwargs.get("config_yaml")),
                                                     inputs, outputs.values()), "call": call})
    log.info("%s: done in %s; read %s; wrote %s", rule, format_duration(time.monotonic() - start),
             describe(list(snakemake.input)), describe(list(snakemake.output)))
    log.info("%s: time split: %s start-up before the job, %.1f s importing, %.1f s the rest",
             rule, "?" if age is None else f"{age:.1f} s", imports.seconds,
             time.monotonic() - start - imports.seconds)


def job_function(name: str):
    """The job function of stage or report rule ``name``: a stage's module alone is imported."""
    from lsrbench.stages import STAGE_NAMES, stage

    if name in STAGE_NAMES:
        return stage(name).job
    from lsrbench.report.reports import report_job

    return report_job(name)


def _fail(rule: str, line: str, kind: str = "error", status: int = 1) -> None:
    log.error("%s: %s", rule, line)
    print(f"lsrbench: {kind}: {line}", file=sys.stderr)
    sys.exit(status)


def saved_progress(kwargs: dict) -> str:
    """What an interrupted job leaves to resume from: a training's latest complete checkpoint, an
    index's finished document shards; else nothing (the job is made again from the start)."""
    from lsrbench.model.resume import complete_checkpoints

    checkpoints = complete_checkpoints(kwargs["checkpoint_dir"]) if kwargs.get("checkpoint_dir") else []
    if checkpoints:
        step, folder = checkpoints[-1]
        return f"its checkpoint of step {step} is saved ({folder}), training resumes from it"
    shards = sorted(Path(kwargs["shard_dir"]).glob("shard-*.npz")) if kwargs.get("shard_dir") else []
    if shards:
        return f"{len(shards)} document shard(s) are saved ({kwargs['shard_dir']}), encoding resumes after them"
    return "nothing of this job was saved (no output is half-written), it starts again"


def _output_folder(outputs: list) -> str | None:
    flat = [str(q) for p in outputs for q in ([p] if isinstance(p, (str, os.PathLike)) else p)]
    if not flat:
        return None
    common = os.path.commonpath([os.path.abspath(p) for p in flat])
    folder = common if len(flat) > 1 or Path(flat[0]).is_dir() else os.path.dirname(common)
    return os.path.relpath(folder) if not os.path.isabs(flat[0]) else folder


def describe(paths: list[str]) -> str:
    """``a.json (1.2 kB), model/ (7 files, 31.0 MB)``: each path with its size; more than five
    paths as one total."""
    # a named input may hold a list (Snakemake flattens them; a hand-built job may not)
    flat = [q for p in paths for q in ([p] if isinstance(p, (str, os.PathLike)) else p)]
    sizes = [(p, *_size(p)) for p in flat]
    if not sizes:
        return "nothing"
    if len(sizes) > 5:
        return f"{len(sizes)} paths ({sum(n for _, n, _ in sizes)} files, {human_bytes(sum(b for _, _, b in sizes))})"
    return ", ".join(f"{p}/ ({n} files, {human_bytes(b)})" if Path(p).is_dir() else f"{p} ({human_bytes(b)})"
                     for p, n, b in sizes)


def _size(path: str) -> tuple[int, int]:
    p = Path(path)
    if p.is_file():
        return 1, p.stat().st_size
    files = [f for f in p.rglob("*") if f.is_file()] if p.is_dir() else []
    return len(files), sum(f.stat().st_size for f in files)
