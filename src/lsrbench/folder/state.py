"""A results folder is one config's and complete: what the Snakefile checks before the DAG is built, and the two
things it does while Snakemake builds it (:class:`DagHooks`)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from lsrbench.dag.folders import PARAMS_JSON
from lsrbench.folder.records import DamagedRecord, changed_files, future_stamp, load_record
from lsrbench.errors import InputError

__all__ = ["FolderState", "DagHooks", "config_text", "refuse_results_folder_as_workdir"]

# The output a stage writes its own manifest to (lsrbench.provenance.manifest_fields), where it writes one.
STAGE_MANIFEST = "provenance_json"


def refuse_results_folder_as_workdir(workdir: str | os.PathLike = ".") -> None:
    """Snakemake run in a results folder itself (``cd results; snakemake -s ../Snakefile``, ``-d
    results``) would plan every job anew in ``results/results``: one line instead, before anything."""
    from lsrbench.dag.folders import ID_REGEX
    from lsrbench.names import MANIFESTS

    here = Path(workdir).resolve()
    snapshots = [p for p in (here / "configs").glob("*/params.json") if re.fullmatch(ID_REGEX, p.parent.name)]
    if snapshots or (here / MANIFESTS).is_dir():
        raise InputError(here, None, "a results folder of lsrbench (it holds configs/<id>/ and the reports), not the "
                                     "folder to run snakemake in: run it from the folder that holds this one as "
                                     f"results/ ({here.parent if here.name == 'results' else 'its parent'})")


def _flat(value) -> list[str]:
    if isinstance(value, (str, os.PathLike)):
        return [str(value)]
    if isinstance(value, dict):
        value = list(value.values())
    return [p for v in (value or []) for p in _flat(v)]


def config_text(config: dict) -> str:
    """A config record in words: ``config <id> (<files>)``."""
    return f"config {config['id']} ({', '.join(config.get('files') or []) or 'files not recorded'})"


class FolderState:
    """What the finished jobs of ``layout``'s config left in its results folder (see the module
    doc). :meth:`check` raises :class:`~lsrbench.errors.InputError` for what is refused; after it,
    ``stale`` maps the first output of each stale job to ``(its outputs, the line saying why)`` and ``foreign`` each
    report rule made with another config to that config's record."""

    def __init__(self, layout, digests, reports, made_with, now: float | None = None):
        # reports: the report rules (lsrbench.report.reports); made_with(outputs): the config record they state
        self.layout, self.digests, self.now, self.made_with = layout, digests, now, made_with
        self.reports = reports
        snapshot = layout.get("configs")
        self.current = {"snapshot": snapshot.path("config.yaml"), "id": snapshot.id, "files": layout.config_files}
        self.stale: dict[str, tuple[list[str], str]] = {}
        self.foreign: dict[str, dict] = {}

    def check(self) -> "FolderState":
        for item in self.layout.all():
            stage = self.layout.stages[item.stage]
            outputs = [item.path(name.rstrip("/")) for name in stage.outputs.values()] + [item.path(PARAMS_JSON)]
            inputs = _flat(stage.inputs(self.layout, item))
            # the stage's own manifest: a second record of its files, written by the stage itself
            manifest = item.path(stage.outputs[STAGE_MANIFEST]) if STAGE_MANIFEST in stage.outputs else None
            self._job(outputs, inputs, f"{item.stage} job", stage.remade_if_changed, item.folder, manifest)
        for rule in self.reports.rules():
            outputs = self.reports.output_files(rule)
            self._job(outputs, _flat(self.reports.input_files(rule)), f"{rule} report", True, None)
            config = self.made_with(outputs) if Path(outputs[0]).exists() else None
            if config is not None and config.get("id") != self.current["id"]:
                self.foreign[rule] = config
        return self

    def _job(self, outputs: list[str], inputs: list[str], name: str, remade: bool, folder: str | None,
             manifest: str | None = None) -> None:
        present = [o for o in outputs if Path(o).exists()]
        if not present:
            return
        for path in present:
            self._refuse_future(Path(path), outputs[-1])
        if len(present) < len(outputs):
            missing = next(o for o in outputs if o not in present)
            self.stale[outputs[0]] = (outputs, f"{missing}: missing: its {name} is made again")
            return
        gone = [p for p in inputs if not Path(p).exists()]
        if gone:
            more = f" (and {len(gone) - 1} more of what it was made from)" if len(gone) > 1 else ""
            self.stale[outputs[0]] = (outputs, f"{gone[0]}: missing{more}: it is made again, and the {name} made "
                                               f"from it ({folder or outputs[0]})")
            return
        changed = self._changed([outputs[-1], *([manifest] if manifest else [])])
        if not changed:
            return
        file, what = changed[0]
        if remade:
            self.stale[outputs[0]] = (outputs, f"{file}: changed after its {name} made it ({what}): made again")
            return
        raise InputError(file, None, f"{what}: it was changed after its {name} made it, and what is made from it would "
                                     f"carry the change: restore it, or delete {folder} to compute it (and what is "
                                     "made from it) again (`lsrbench verify results` lists every changed file)")

    def _changed(self, records: list[str]) -> list[tuple[str, str]]:
        changed = []
        for path in records:
            try:
                record = load_record(path)
            except DamagedRecord as exc:
                changed.append((path, f"{exc}: its record is damaged, so nothing vouches for what the job made"))
                continue
            changed += changed_files(record, self.digests) if record is not None else []
        return changed

    def _refuse_future(self, path: Path, record: str) -> None:
        ahead = future_stamp(path, self.now)
        if ahead is None:
            return
        reference = record if Path(record).exists() and future_stamp(Path(record), self.now) is None else None
        fix = f"touch -r {reference} {path}" if reference else f"touch {path}"
        raise InputError(path, None, f"modified {ahead:.0f} s in the future (a clock ahead, or a copy that kept another "
                                     "machine's times): Snakemake would fail each job that reads it on clock skew and "
                                     f"delete what that job made; give it a time that has passed ({fix}) and run again")

    def foreign_config(self) -> dict | None:
        """The config the folder's foreign reports were made with (the first, when several)."""
        return next(iter(self.foreign.values()), None)


class DagHooks:
    """What the rules' input functions tell while Snakemake builds the DAG (``workflow``: the Snakefile's):
    :meth:`job` and :meth:`report` for each job in it, and :meth:`before_jobs` once the jobs start."""

    def __init__(self, state: FolderState | None, workflow):
        self.state, self.workflow = state, workflow
        self.noted: set[str] = set()
        self.switching = False

    def job(self, outputs: list[str]) -> None:
        """A job of the DAG with these outputs: forced when it is stale."""
        if self.state is not None and outputs[0] in self.state.stale:
            self._force(*self.state.stale[outputs[0]])

    def report(self, rule: str) -> None:
        """Report rule ``rule`` is in the DAG: forced when stale, or made with another config."""
        if self.state is None:
            return
        outputs = self.state.reports.output_files(rule)
        if rule in self.state.foreign:
            self._switch()
            self._force(outputs, None)
        elif outputs[0] in self.state.stale:
            self._force(*self.state.stale[outputs[0]])

    def _force(self, outputs: list[str], why: str | None) -> None:
        dag = self.workflow.dag
        if dag is not None:
            dag.forcefiles.update(outputs)
        if why and outputs[0] not in self.noted:
            self.noted.add(outputs[0])
            print(f"lsrbench: note: {why}", file=sys.stderr)

    def _switch(self) -> None:
        if self.switching:
            return
        state, old = self.state, self.state.foreign_config()
        if self.workflow.executor_plugin is None:
            print(f"lsrbench: error: {state.layout.results}: its reports were made with {config_text(old)}, not with "
                  f"this command's {config_text(state.current)}: make them with it first (the same snakemake "
                  "command without --report), then make the HTML report", file=sys.stderr)
            raise SystemExit(1)
        self.switching = True
        print(f"lsrbench: note: {state.layout.results}: its reports were made with {config_text(old)}; before the "
              f"first job they are removed, and the ones this command asks for are made with "
              f"{config_text(state.current)} from the finished runs", file=sys.stderr)

    def before_jobs(self) -> None:
        """Before the first job (``onstart``): remove every report of another config, each with its
        manifest (the ones in the DAG are made again with this config)."""
        if self.state is None or not self.state.foreign:
            return
        self._switch()
        removed = [Path(p) for rule in self.state.foreign for p in self.state.reports.output_files(rule)]
        for path in removed:
            path.unlink(missing_ok=True)
        results = Path(self.state.layout.results)
        for folder in {p.parent for p in removed if p.parent != results}:  # html/ left empty
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
