"""``lsrbench verify`` re-makes every report of the registry (:mod:`lsrbench.report.reports`) by one loop: its own
check where it declares one (``Report.verify``: differences named by line and cell, or by claim and field,
:mod:`lsrbench.report.verify.diff`), else its job run again on the inputs its manifest records
(:func:`lsrbench.report.verify.remake.remake`); every HTML page against its Markdown report."""

from __future__ import annotations

from pathlib import Path

from lsrbench.dag.report_rule import manifest_path
from lsrbench.report.reports import all_reports
from lsrbench.report.verify.configs import Snapshot
from lsrbench.report.verify.remake import remake
from lsrbench.report.verify.trace import Trace

__all__ = ["verify_reports"]


def verify_reports(root: Path, stated: dict[Path, tuple[dict, Snapshot]], trace: Trace) -> None:
    """Every report of ``root`` made again and compared (those absent are skipped: not made)."""
    for name, report in all_reports().items():
        present = [root / f for f in report.outputs.values() if (root / f).is_file()]
        if not present:
            continue
        try:
            if report.verify is not None:
                report.verify(root, stated, trace)
            else:
                remake(root, report, Path(manifest_path(name, str(root))), trace)
        except Exception as exc:  # noqa: BLE001 - run files too damaged to make it from: named above, file by file
            trace.problems.append(f"{present[0]}: cannot be made again from its run files "
                                  f"({type(exc).__name__}: {' '.join(str(exc).split())})")
    _html_pages(root, trace)


def _html_pages(root: Path, trace: Trace) -> None:
    from lsrbench.report.render import report_page

    for page in sorted((root / "html").glob("*.html")):
        md = root / f"{page.stem}.md"
        if not md.is_file():
            trace.problems.append(f"{page}: its Markdown report {md} is missing")
        elif page.read_text(encoding="utf-8", errors="replace") != report_page(md.read_text(encoding="utf-8"), md.stem):
            target = page.relative_to(root.parent) if root.parent != root else page
            trace.problems.append(f"{page}: not the page of {md} as it is now (stale or edited): snakemake --cores 1 "
                                  f"{target} makes it again, after {md.name} where that no longer has the bytes its "
                                  "manifest records (made again from its run files, never from the edited text)")
