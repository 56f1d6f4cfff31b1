"""``lsrbench status``: where a running grid stands, locally or on SLURM, from files only (it starts, locks and
writes nothing): jobs from the Layout, running ones from Snakemake's incomplete markers, progress from the jobs'
logs, times from Snakemake's metadata, and an ETA."""

from __future__ import annotations

import json
import os
import time
from base64 import urlsafe_b64decode
from dataclasses import dataclass, field
from pathlib import Path

from lsrbench.names import split_run_name
from lsrbench.progress import ProgressLine, format_duration, parse_progress

__all__ = ["Job", "Status", "show_status", "incomplete_markers", "snakemake_locked", "read_status", "status_text"]

# The plan's stage of each rule (lsrbench.ops.plan: TRAIN_RULES, INDEX_RULES, EVALUATE_RULES)
PLAN_COLUMN = {"train": "train", "index": "index", "index_queries": "index", "evaluate": "evaluate"}


@dataclass
class Job:
    """One job of the grid: its rule, key, outputs and state (``done``, ``running``,
    ``interrupted``: marked incomplete with no Snakemake running, ``stopped``: a log but not done
    and not marked, i.e. failed or killed, ``pending``)."""

    rule: str
    key: dict
    outputs: list[str]
    log: str
    state: str = "pending"
    started: float | None = None
    seconds: float | None = None          # measured wall time of a finished job
    external_jobid: str | None = None
    progress: ProgressLine | None = None
    last_line: str = ""
    estimate: float | None = None         # seconds left
    estimate_from: str = ""
    item: object = field(default=None, repr=False)  # its Addressed output (lsrbench.dag.layout)

    @property
    def backbone(self) -> str | None:
        return split_run_name(self.key["run"])[0] if "run" in self.key else self.key.get("backbone")

    def name(self) -> str:
        return " ".join([self.rule] + [f"{k}={v}" for k, v in self.key.items()])


@dataclass
class Status:
    workdir: Path
    config_files: list[str]
    jobs: list[Job]
    locked: bool
    reports: tuple[int, int]  # report files there and made with this config, of all the config's
    other_running: list[str] = field(default_factory=list)  # marked outputs of no stage (the reports)
    now: float = 0.0
    other_config: dict = field(default_factory=dict)  # report file -> the config record it was made with instead


def _decode_marker(parts: tuple[str, ...]) -> str | None:
    try:
        return urlsafe_b64decode("".join(p[1:] if p.startswith("@") else p for p in parts)).decode()
    except (ValueError, UnicodeDecodeError):
        return None


def _records(folder: Path) -> dict[str, Path]:
    """Output path -> record file of one of Snakemake's record folders (``incomplete``, ``metadata``)."""
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = Path(root) / name
            key = _decode_marker(path.relative_to(folder).parts)
            if key is not None:
                out[os.path.normpath(key)] = path
    return out


def _read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # a record being written (Snakemake ignores those too)
    return value if isinstance(value, dict) else {}


def incomplete_markers(workdir: str | os.PathLike) -> dict[str, dict]:
    """Every output Snakemake marked incomplete in ``workdir``: path -> ``{"external_jobid", "started"}``."""
    folder = Path(workdir) / ".snakemake" / "incomplete"
    return {key: {**_read_json(path), "started": path.stat().st_mtime}
            for key, path in _records(folder).items() if path.exists()}


def snakemake_locked(workdir: str | os.PathLike) -> bool:
    """Whether a Snakemake holds the working directory (its ``.snakemake/locks/N.output.lock``)."""
    return any((Path(workdir) / ".snakemake" / "locks").glob("*.lock"))


def _last_lines(log: Path) -> tuple[ProgressLine | None, str]:
    """The last progress line of a log and its last line (the tail only: logs of long jobs grow)."""
    try:
        with open(log, "rb") as fh:
            fh.seek(max(0, log.stat().st_size - 65536))
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None, ""
    progress = next((p for p in map(parse_progress, reversed(lines)) if p is not None), None)
    return progress, (lines[-1] if lines else "")


def _all_jobs(layout) -> list[Job]:
    """Every addressed output of the config as a job, stage by stage in declaration order."""
    jobs = []
    for stage in layout.stages.values():
        for item in layout.of_stage(stage.name):
            outputs = [item.path(name.rstrip("/")) for name in stage.outputs.values()] + [item.path("params.json")]
            key = {k: v for k, v in item.fields.items() if k in ("dataset", "backbone", "run", "k", "seed")}
            jobs.append(Job(stage.name, key, outputs, item.path(stage.log or f"{stage.name}.log"), item=item))
    return jobs


def _paths(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [p for v in value for p in _paths(v)] if isinstance(value, (list, tuple)) else []


def _report_inputs(layout) -> list[str]:
    """What the config's reports read (the default target's report rules, lsrbench.report.reports)."""
    from lsrbench.report.reports import report_rules, used_reports

    rules = report_rules(layout)
    return [p for name in used_reports(layout.config) for p in _paths(rules.input_files(name))]


def _jobs(layout) -> list[Job]:
    """The jobs the default target runs: the addressed outputs the reports read, and what those
    read, transitively (a stage's outputs the config does not need, e.g. the probe, are no job)."""
    jobs = _all_jobs(layout)
    owner = {os.path.normpath(o): job for job in jobs for o in job.outputs}
    needed, todo = set(), [os.path.normpath(p) for p in _report_inputs(layout)]
    while todo:
        path = todo.pop()
        job = next((owner[p] for p in [path, *map(str, Path(path).parents)] if p in owner), None)
        if job is None or id(job) in needed:
            continue
        needed.add(id(job))
        todo += [os.path.normpath(p) for p in _paths(layout.stages[job.rule].inputs(layout, job.item))]
    return [job for job in jobs if id(job) in needed]


def _classify(job: Job, workdir: Path, markers: dict, metadata: dict, locked: bool) -> None:
    marked = [markers[o] for o in map(os.path.normpath, job.outputs) if o in markers]
    log = workdir / job.log
    if marked:
        job.state = "running" if locked else "interrupted"
        job.started = min(m["started"] for m in marked)
        job.external_jobid = next((str(m["external_jobid"]) for m in marked if m.get("external_jobid")), None)
    elif all((workdir / o).exists() for o in job.outputs):
        job.state = "done"
        first = os.path.normpath(job.outputs[0])
        record = _read_json(metadata[first]) if first in metadata else {}
        if record.get("starttime") and record.get("endtime"):
            job.seconds = record["endtime"] - record["starttime"]
    elif log.is_file():
        job.state = "stopped"
    if job.state != "pending" and log.is_file():
        job.progress, job.last_line = _last_lines(log)


def read_status(layout, workdir: str | os.PathLike, config_files: list[str], report_files: list[str],
                plan: dict | None = None, now: float | None = None) -> Status:
    """The status of every job of ``layout`` (results paths relative to ``workdir``, as Snakemake
    spells them) and of the ``report_files``, with the ETA of each job not done."""
    workdir = Path(workdir)
    markers, locked = incomplete_markers(workdir), snakemake_locked(workdir)
    metadata = _records(workdir / ".snakemake" / "metadata")
    jobs = _jobs(layout)
    for job in jobs:
        _classify(job, workdir, markers, metadata, locked)
    outputs = {os.path.normpath(o) for job in jobs for o in job.outputs}
    other = sorted(k for k in markers if k not in outputs)
    made_with = _report_configs(layout, workdir)
    current = layout.get("configs").id
    foreign = {f: made_with[f] for f in report_files if made_with.get(f) and made_with[f].get("id") != current}
    reports = sum(1 for f in report_files if (workdir / f).exists() and os.path.normpath(f) not in markers
                  and f not in foreign)
    status = Status(workdir, config_files, jobs, locked, (reports, len(report_files)), other,
                    time.time() if now is None else now, foreign)
    _estimate(status, layout.config, plan or {})
    return status


def _report_configs(layout, workdir: Path) -> dict[str, dict]:
    """Report file -> the config record its rule's manifest (or, made before manifests, the file
    itself) says it was made with (:func:`lsrbench.report.config_record.report_config`)."""
    from lsrbench.report.config_record import report_config
    from lsrbench.report.reports import report_rules

    rules, found = report_rules(layout), {}
    for rule in rules.rules():
        outputs = rules.output_files(rule)
        config = report_config([str(workdir / o) for o in outputs]) if (workdir / outputs[0]).exists() else None
        found.update({o: config for o in outputs if config is not None})
    return found


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _per_job_plan(plan: dict, rule: str, backbone: str | None) -> float | None:
    column, entry = PLAN_COLUMN.get(rule), (plan.get("backbones") or {}).get(backbone or "")
    if not column or not entry or entry.get(f"{column}_hours") is None or not entry.get(f"{column}_jobs"):
        return None
    return entry[f"{column}_hours"] * 3600 / entry[f"{column}_jobs"]


def _per_job(status: Status, config: dict, plan: dict, rule: str, backbone: str | None) -> tuple[float | None, str]:
    """Seconds one job of ``rule`` (of ``backbone``) takes, and where that number comes from."""
    done = [j for j in status.jobs if j.rule == rule and j.seconds is not None]
    for jobs, what in (([j for j in done if j.backbone == backbone], f"measured ({rule}, {backbone})"),
                       (done, f"measured ({rule})")):
        if jobs:
            return _mean([j.seconds for j in jobs]), what
    if rule == "train":
        rates = [j.progress.rate for j in status.jobs if j.rule == "train" and j.backbone == backbone
                 and j.progress and j.progress.rate]
        if rates:
            return config["recipe"]["steps"] / _mean(rates), "measured steps/s (train)"
    seconds = _per_job_plan(plan, rule, backbone)
    return (seconds, "lsrbench plan") if seconds is not None else (None, "")


def _estimate(status: Status, config: dict, plan: dict) -> None:
    for job in status.jobs:
        if job.state == "done":
            continue
        if job.state == "running" and job.progress and job.progress.eta is not None:
            job.estimate = max(0.0, job.progress.eta - (status.now - job.progress.time))
            job.estimate_from = "its progress line"
            continue
        per_job, job.estimate_from = _per_job(status, config, plan, job.rule, job.backbone)
        if per_job is not None:
            elapsed = status.now - job.started if job.state == "running" and job.started else 0.0
            job.estimate = max(0.0, per_job - elapsed)


def _ago(status: Status, when: float | None) -> str:
    return format_duration(status.now - when) if when else "?"


def _running_lines(status: Status) -> list[str]:
    lines = []
    for state, title in (("running", "running"), ("interrupted", "marked incomplete, no Snakemake running "
                                                  "(interrupted; --rerun-incomplete re-runs them)"),
                         ("stopped", "stopped without finishing (failed or killed: see the log)")):
        jobs = [j for j in status.jobs if j.state == state]
        if not jobs:
            continue
        lines.append(f"{title} ({len(jobs)}):")
        for job in jobs:
            since = f" for {_ago(status, job.started)}" if job.started else ""
            slurm = f" [job {job.external_jobid}]" if job.external_jobid else ""
            lines.append(f"  {job.name()}{slurm}{since}")
            if job.progress:
                lines.append(f"    {job.progress.text} ({_ago(status, job.progress.time)} ago)")
            elif job.last_line:
                lines.append(f"    {job.last_line[:200]}")
            lines.append(f"    log: {job.log}")
    lines += [f"running (no stage job): {path}" for path in status.other_running]
    return lines


def _rule_table(status: Status) -> list[str]:
    import pandas as pd

    rows = []
    for rule in dict.fromkeys(j.rule for j in status.jobs):
        jobs = [j for j in status.jobs if j.rule == rule]
        seconds = [j.seconds for j in jobs if j.seconds is not None]
        rows.append({"rule": rule, "done": f"{sum(j.state == 'done' for j in jobs)}/{len(jobs)}",
                     "running": sum(j.state == "running" for j in jobs),
                     "measured per job": format_duration(_mean(seconds)) if seconds else "-"})
    done = sum(j.state == "done" for j in status.jobs)
    rows.append({"rule": "total", "done": f"{done}/{len(status.jobs)}",
                 "running": sum(j.state == "running" for j in status.jobs), "measured per job": ""})
    rows.append({"rule": "report files", "done": f"{status.reports[0]}/{status.reports[1]}", "running": "",
                 "measured per job": ""})
    return pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True).splitlines()


def _other_config_line(status: Status) -> list[str]:
    """The report files of this config's list that another config made, and how to make them again."""
    from lsrbench.folder.state import config_text

    if not status.other_config:
        return []
    first = next(iter(status.other_config.values()))
    names = ", ".join(Path(f).name for f in status.other_config)
    return [f"report files made with {config_text(first)}, not with this config: {names}; snakemake without a target "
            "(and this --configfile) makes every report again with this config"]


def _eta_line(status: Status) -> str:
    left = [j for j in status.jobs if j.state != "done"]
    if not left and status.reports[0] == status.reports[1]:
        return "all done"
    known = [j for j in left if j.estimate is not None]
    if not known:
        return f"ETA not estimated yet: no job of {len(left)} not done measured, no --plan (lsrbench plan --json FILE)"
    work = sum(j.estimate for j in known)
    running = max(1, sum(j.state == "running" for j in status.jobs))
    sources = sorted({j.estimate_from for j in known})
    unknown = sorted({j.rule for j in left if j.estimate is None})
    return (f"ETA ~{format_duration(work / running)}: {format_duration(work)} of job time left in {len(known)} of "
            f"{len(left)} jobs not done, at {running} job(s) at a time (from: {'; '.join(sources) or 'nothing'})"
            + (f"; not estimated: {', '.join(unknown)} and the reports" if unknown else "; reports not estimated"))


def status_text(status: Status) -> str:
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(status.now))
    head = "Snakemake running here (.snakemake/locks)" if status.locked else "no Snakemake running here (no lock)"
    lines = [f"lsrbench status: {status.workdir} ({', '.join(status.config_files)}) at {when}: {head}"]
    lines += _running_lines(status) + [""] + _rule_table(status) + _other_config_line(status) + ["", _eta_line(status)]
    return "\n".join(lines) + "\n"


def _read_plan(path: str | None) -> dict:
    from lsrbench.errors import InputError

    if not path:
        return {}
    try:
        plan = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(path, None, f"cannot read it ({exc.strerror}); write it with lsrbench plan --json FILE") from None
    except ValueError:
        raise InputError(path, None, "not JSON: write it with lsrbench plan --json FILE") from None
    if not isinstance(plan, dict) or not isinstance(plan.get("backbones"), dict):
        raise InputError(path, "backbones", "missing: not a plan of lsrbench plan --json FILE")
    return plan


def show_status(config_files: list[str], overrides: dict | None, directory: str, plan_file: str | None = None,
                watch: float | None = None) -> int:
    """Print the status of the grid of ``config_files`` run in ``directory``; with ``watch``, again
    every ``watch`` seconds until every job and report is done (or Ctrl-C)."""
    import sys

    from lsrbench.dag.fingerprint import FileDigests
    from lsrbench.report.reports import report_outputs
    from lsrbench.errors import InputError
    from lsrbench.ops.gc import config_layout

    workdir = Path(directory)
    if not workdir.is_dir():
        raise InputError(directory, None, "not found (the folder that holds the results folder)")
    plan = _read_plan(plan_file)
    # the digest cache is read, never written: status changes nothing in the results folder
    digests = FileDigests(workdir / "results" / ".cache" / "file-digests.json")
    layout = config_layout(config_files, overrides, "results", digests)
    reports = report_outputs(layout.config, "results")
    while True:
        status = read_status(layout, workdir, config_files, reports, plan)
        if watch and sys.stdout.isatty():
            print("\033[H\033[J", end="")
        print(status_text(status), end="", flush=True)
        finished = all(j.state == "done" for j in status.jobs) and status.reports[0] == status.reports[1]
        if not watch or finished:
            return 0
        try:
            time.sleep(watch)
        except KeyboardInterrupt:
            return 0
        print()


def add_status_arguments(p) -> None:
    """``lsrbench status``'s arguments besides ``--configfile`` and ``--config``."""
    p.description = ("Where a grid run by snakemake stands (locally or on SLURM: it reads files only): the running "
                     "jobs with the last progress line of their logs, done/total per rule, and an ETA from the "
                     "measured job times, the logs' rates and lsrbench plan's estimates (--plan). Run it where "
                     "the working directory is (docs/cluster.md).")
    from lsrbench.cli_options import add_mirror_option, add_results_option

    add_results_option(p, directory_alias=True)  # the grid runs in the folder that holds it
    add_mirror_option(p, "the mirror folder the grid runs with (--config mirror=DIR)")
    p.add_argument("--plan", metavar="FILE", help="a plan written by lsrbench plan --json FILE: its estimate per job "
                                                  "for train, index and evaluate jobs nothing was measured for yet")
    p.add_argument("--watch", type=_seconds, metavar="SECONDS", help="print it again every SECONDS until all is done")


def _seconds(text: str) -> float:
    import argparse

    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number of seconds above 0")
    return value
