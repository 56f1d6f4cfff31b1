"""One report, declared once (:class:`Report`), and its Snakemake rule derived from that declaration
(:class:`ReportRules`), as :mod:`lsrbench.dag.stage` does for a stage."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Callable

from lsrbench.names import MANIFESTS

__all__ = ["Report", "Shown", "ReportRules", "manifest_path", "HTML_RULE"]

HTML_RULE = "html_"  # the rule of the HTML page of report file P.md is html_P


def _nothing(*args) -> dict:
    return {}


def _always(config: dict) -> bool:
    return True


@dataclass(frozen=True)
class Shown:
    """How ``snakemake --report`` shows an output: its category, its caption (a stem under
    workflow/report/), and where the landing page lists it (``title``, ``rank``: its place)."""

    category: str
    caption: str
    title: str | None = None
    rank: int = 0


@dataclass(frozen=True)
class Report:
    """One report rule."""

    name: str
    job: Callable
    outputs: dict
    files: Callable = _nothing
    keyed: Callable = _nothing
    settings: Callable = _nothing
    shown: dict = field(default_factory=dict)
    page: Shown | None = None
    when: Callable = _always
    stated_in: tuple = ()
    resources: dict = field(default_factory=dict)
    verify: Callable | None = field(default=None, repr=False)

    def markdown(self) -> str:
        """The Markdown output its HTML page renders."""
        return next(f for f in self.outputs.values() if f.endswith(".md"))


def manifest_path(rule: str, results: str = "results") -> str:
    """``results/manifests/<rule>.json``: what report rule ``rule`` read and wrote, with SHA-256."""
    return f"{results}/{MANIFESTS}/{rule}.json"


def page_rule(report: Report) -> str:
    return f"{HTML_RULE}{PurePath(report.markdown()).stem}"


class ReportRules:
    """The Snakemake side of the declared reports (``reports``: name -> :class:`Report`) and their
    HTML pages for one layout; ``visit`` is told each rule the DAG being built holds."""

    def __init__(self, layout, reports: dict, visit: Callable[[str], None] = lambda rule: None):
        self.layout, self.reports, self.visit = layout, reports, visit
        self.pages = {page_rule(r): r for r in reports.values() if r.page is not None}

    def _outputs(self, name: str) -> dict:
        if name in self.pages:
            return {"html": f"html/{name[len(HTML_RULE):]}.html"}
        return self.reports[name].outputs

    def outputs(self, name: str, **shown) -> dict:
        """The rule's outputs (``shown``: argument -> a function flagging it for ``--report``) and manifest."""
        results = self.layout.results
        files = {arg: f"{results}/{file}" for arg, file in self._outputs(name).items()}
        return {**{arg: shown[arg](path) if arg in shown else path for arg, path in files.items()},
                "manifest_json": manifest_path(name, results)}

    def _config(self) -> dict:
        snapshot = self.layout.get("configs")
        return {"config_yaml": snapshot.path("config.yaml"), "_config_params": snapshot.path("params.json")}

    def input_files(self, name: str) -> dict:
        """Every file the rule reads, by name (its config snapshot among them)."""
        if name in self.pages:
            return {"markdown": f"{self.layout.results}/{self.pages[name].markdown()}", **self._config()}
        report = self.reports[name]
        keyed = {n: [row[-1] for row in rows] for n, rows in report.keyed(self.layout).items()}
        return {**self._config(), **report.files(self.layout), **keyed}

    def inputs(self, name: str) -> Callable:
        """An input function (use with ``unpack``) of :meth:`input_files`."""
        def files(wildcards):
            self.visit(name)
            return self.input_files(name)
        return files

    def params(self, name: str) -> dict:
        """``report`` (the rule, which names its job), ``settings`` and ``keyed`` run files."""
        if name in self.pages:
            return {"report": name}
        report = self.reports[name]
        return {"report": name, "settings": report.settings(self.layout.config), "keyed": report.keyed(self.layout)}

    def names(self) -> list[str]:
        """The report rules of this config's Snakefile: every report, and the HTML pages it has."""
        config = self.layout.config
        return [*self.reports, *(p for p, r in self.pages.items() if r.when(config))]

    def shown(self, name: str) -> dict:
        """Argument -> :class:`Shown` of the outputs ``snakemake --report`` shows."""
        return {"html": self.pages[name].page} if name in self.pages else self.reports[name].shown

    def resources(self, name: str) -> dict:
        return {} if name in self.pages else self.reports[name].resources

    def rules(self) -> list[str]:
        """Every report rule a results folder may hold (the HTML pages of every config)."""
        return [*self.reports, *self.pages]

    def output_files(self, name: str) -> list[str]:
        """The files of rule ``name``, its manifest last."""
        return list(self.outputs(name).values())
