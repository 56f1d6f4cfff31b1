"""A module per report, each ending in ``REPORT = Report(...)`` (:class:`lsrbench.dag.report_rule.Report`: what it
reads, writes, shows and runs) beside its job function; the registry below lists them."""

from __future__ import annotations

from importlib import import_module
from pathlib import PurePath

from lsrbench.dag.report_rule import HTML_RULE, Report, ReportRules, manifest_path, page_rule

__all__ = ["REPORT_MODULES", "all_reports", "report_rules", "used_reports", "report_outputs", "all_report_rules",
           "rule_files", "html_pages", "report_job", "stated_in", "landing_entries"]

# The registry: one line per report module (the rules are made in this order).
REPORT_MODULES = (
    "lsrbench.report.reports.collect",
    "lsrbench.report.reports.chance",
    "lsrbench.report.reports.table1",
    "lsrbench.report.reports.table_beir",
    "lsrbench.report.reports.norms",
    "lsrbench.report.reports.tradeoff",
    "lsrbench.report.reports.loss_curves",
    "lsrbench.report.reports.claims",
    "lsrbench.report.reports.probe",
    "lsrbench.report.reports.probe_outcomes",
)


def all_reports() -> dict[str, Report]:
    """Rule name -> declaration, in registry order."""
    reports = [import_module(module).REPORT for module in REPORT_MODULES]
    return {r.name: r for r in reports}


def report_rules(layout, visit=lambda rule: None) -> ReportRules:
    return ReportRules(layout, all_reports(), visit)


def _pages() -> dict[str, Report]:
    return {page_rule(r): r for r in all_reports().values() if r.page is not None}


def used_reports(config: dict) -> list[str]:
    """The report rules the default target runs for ``config``, in registry order, then its pages."""
    reports = all_reports()
    return [n for n, r in reports.items() if r.when(config)] + list(html_pages(config))


def html_pages(config: dict) -> dict[str, str]:
    """Page rule -> category of the HTML pages this config's report has."""
    return {rule: r.page.category for rule, r in _pages().items() if r.when(config)}


def all_report_rules() -> list[str]:
    """Every report rule a results folder may hold (the HTML pages of every config)."""
    return [*all_reports(), *_pages()]


def _rule_outputs(name: str) -> list[str]:
    if name.startswith(HTML_RULE):
        return [f"html/{name[len(HTML_RULE):]}.html"]
    return list(all_reports()[name].outputs.values())


def rule_files(name: str, results: str = "results") -> list[str]:
    """The files report rule ``name`` writes under ``results``, its manifest last."""
    return [f"{results}/{file}" for file in _rule_outputs(name)] + [manifest_path(name, results)]


def report_outputs(config: dict, results: str = "results") -> list[str]:
    """Every file the default target's report rules write, their manifests included."""
    return [path for name in used_reports(config) for path in rule_files(name, results)]


def report_job(rule: str):
    """The job function of report rule ``rule`` (a page's: the Markdown rendered as HTML)."""
    if rule.startswith(HTML_RULE):
        from lsrbench.report.render import report_html

        return report_html
    return all_reports()[rule].job


def stated_in() -> tuple[tuple[str, str], ...]:
    """(file, how) of every output that says which config made it: ``md`` its last line, ``json`` its ``config``."""
    return tuple((file, "md" if file.endswith(".md") else "json") for r in all_reports().values()
                 for arg, file in r.outputs.items() if arg in r.stated_in)


def landing_entries(config: dict | None, results: str = "results") -> list[tuple[str, str, str]]:
    """(title, path, caption stem) of every titled result of ``config`` (None: of any config), in
    the landing page's order."""
    found = []
    for r in all_reports().values():
        if config is not None and not r.when(config):
            continue
        shown = [(s, f"{results}/{r.outputs[arg]}") for arg, s in r.shown.items() if s.title]
        if r.page is not None:
            shown.append((r.page, f"{results}/html/{PurePath(r.markdown()).stem}.html"))
        found += shown
    return [(s.title, path, s.caption) for s, path in sorted(found, key=lambda e: e[0].rank)]
