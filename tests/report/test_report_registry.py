"""The report registry (lsrbench.report.reports): a report's file names are declared once, in its
module, and read from there (issue 50)."""

from __future__ import annotations

from helpers.paths import REPO
from lsrbench.report.reports import all_report_rules, all_reports, html_pages, stated_in, used_reports
from lsrbench.stages import all_stages


def _literal_files(name: str, skip: tuple[str, ...] = ()) -> list[str]:
    """The files of src/ that spell ``name`` as a string literal."""
    src = REPO / "src" / "lsrbench"
    return sorted(str(p.relative_to(src)) for p in src.rglob("*.py")
                  if not str(p.relative_to(src)).startswith(skip)
                  and (f'"{name}"' in (text := p.read_text(encoding="utf-8")) or f"'{name}'" in text))


def test_no_report_file_name_is_a_literal_in_more_than_two_files():
    # a stage's own file of the same name (the probe stage's probe.json) is not a report file
    stage_files = {file for stage in all_stages() for file in stage.outputs.values()}
    counts = {}
    for report in all_reports().values():
        for file in report.outputs.values():
            counts[file] = _literal_files(file, ("stages/",) if file in stage_files else ())
    assert counts["table1.md"] == ["report/reports/table1.py"]  # the counter finds what it counts
    assert {f: where for f, where in counts.items() if len(where) > 2} == {}


def test_the_rules_pages_and_config_records_derive_from_the_declarations():
    reports = all_reports()
    assert list(reports) == ["collect", "chance", "table1", "table_beir", "norms_report", "tradeoff", "loss_curves",
                             "claims", "probe_report", "probe_outcomes"]
    assert all_report_rules()[len(reports):] == ["html_table1", "html_table_beir", "html_norms", "html_claims",
                                                 "html_probe_outcomes"]
    from lsrbench.config.layers import load_config_files

    no_claims = {**load_config_files([str(REPO / "config" / "config.yaml")])[0], "claims": None}
    assert "claims" in used_reports({**no_claims, "claims": {"list": []}})
    assert "claims" not in used_reports(no_claims) and "html_claims" not in html_pages(no_claims)
    assert dict(stated_in())["claims.md"] == "md" and dict(stated_in())["table1.cells.json"] == "json"
    assert "probe.md" not in dict(stated_in())  # the probe's report names no config


def test_dag_imports_no_report():
    """dag/ is the declaration machinery reports are built on: it names none of them (issue 50)."""
    import ast

    found = []
    for path in (REPO / "src" / "lsrbench" / "dag").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom) else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            found += [f"{path.name}: {n}" for n in names if n.startswith(("lsrbench.report", "lsrbench.ops"))]
    assert found == []
